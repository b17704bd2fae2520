"""Seeded schedules, target resolution, trigger phrases and the ledger's guarantees — no Docker."""

from __future__ import annotations

import itertools
import random
import threading
import time
from pathlib import Path

import pytest

from chaos.cluster.fake import FakeCluster
from chaos.core.ledger import FaultLedger, LedgerClosed
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec
from chaos.core.target import Target
from chaos.histories.jsonl import HistoryRecorder, read_history
from chaos.nemesis.kill import KillFault
from chaos.nemesis.pause import PauseFault
from chaos.nemesis.plan import Choice, generate, signature
from chaos.nemesis.registry import make_nemeses, parse_nemesis, planned_steps
from chaos.nemesis.runner import ScheduleNemesis
from chaos.nemesis.targets import TargetError, resolve_targets
from chaos.nemesis.trigger import TriggerError, TriggerNemesis, bind, parse_trigger
from chaos.workloads.lab1.points import HOLD_POINTS as LAB1_HOLDS
from chaos.workloads.lab3.points import HOLD_POINTS as LAB3_HOLDS
from tests.unit.test_framework_fake import make_ctx

CHOICES = [Choice(fault="pause", target="worker"), Choice(fault="kill"), Choice(fault="partition")]


def test_generation_is_a_function_of_the_seed() -> None:
    def plan(seed: int) -> list[dict]:
        steps = generate(
            CHOICES, rng=random.Random(seed), horizon=60, interval=4, duration=2, jitter=0.5
        )
        return [s.to_json() for s in steps]

    assert plan(7) == plan(7)
    assert plan(7) != plan(8)
    assert len({repr(plan(s)) for s in range(20)}) == 20


def test_generated_faults_never_overlap_and_end_by_the_horizon() -> None:
    for seed in range(50):
        steps = generate(
            CHOICES, rng=random.Random(seed), horizon=30, interval=3, duration=2.5, jitter=0.8
        )
        assert steps and all(s.at + s.duration <= 30 + 1e-9 for s in steps)
        for a, b in itertools.pairwise(steps):
            gap = b.at - (a.at + a.duration)
            assert 3 * 0.2 - 1e-9 <= gap <= 3 * 1.8 + 1e-9, (seed, a, b)


def test_spec_plan_uses_the_schedule_stream_of_the_seed() -> None:
    spec = TestSpec(workload="lab3", seed=5, time_limit=20, nemesis_interval=2, fault_duration=1)
    a = planned_steps(spec, CHOICES)
    assert a == planned_steps(spec, CHOICES)
    assert a != planned_steps(TestSpec(**{**spec.to_json(), "seed": 6}), CHOICES)


def test_signature_ignores_wall_times_and_pids_but_not_targets() -> None:
    entry = {
        "fault": "pause",
        "intent": {"at": 1.2345, "duration": 2.0, "target": "worker"},
        "targets": [{"node": "n2", "process": "worker", "pid": 40}],
        "started": 4.56,
    }
    other_machine = {
        **entry,
        "targets": [{"node": "n2", "process": "worker", "pid": 99}],
        "started": 9.1,
    }
    assert signature([entry]) == signature([other_machine])
    moved = {**entry, "targets": [{"node": "n3", "process": "worker", "pid": 40}]}
    assert signature([entry]) != signature([moved])


def test_nemesis_list_with_targets_and_node_lists() -> None:
    points = {"lost-publish-ack": ("relay", False)}
    assert parse_nemesis(
        ("pause:worker", "partition:n1", "n2", "kill", "lost-publish-ack"), points
    ) == [
        ("pause", "worker"),
        ("partition", "n1+n2"),
        ("kill", None),
        ("lost-publish-ack", None),
    ]
    with pytest.raises(ValueError, match="unknown nemesis 'explode'"):
        parse_nemesis(("explode",))


class _Holds:
    def __init__(self, points: dict) -> None:
        self.hold_points = points


LAB3, LAB1 = _Holds(LAB3_HOLDS), _Holds(LAB1_HOLDS)


def _point(phrase: str, wl: _Holds = LAB3) -> str:
    t = bind(parse_trigger(phrase), wl, "lab")
    assert t.point is not None
    return t.point.file


def test_trigger_phrases_map_to_hold_points() -> None:
    t = parse_trigger("pause worker on delivery")
    assert (_point(t.phrase), t.duration, t.until, t.times) == ("hold-worker-commit", None, None, 1)
    t = parse_trigger("kill relay before publish for 3s 2 times")
    assert (t.fault, _point(t.phrase), t.duration, t.times) == (
        "kill",
        "hold-relay-publish",
        3.0,
        2,
    )
    t = parse_trigger("pause holder on lock-acquired until lock-acquired every time")
    assert (_point(t.phrase, LAB1), t.until, t.times) == (
        "hold-orders-lock-acquired",
        "lock-acquired",
        None,
    )
    assert _point("pause worker after delivery") == "hold-worker-delivery"
    assert all(p.file.startswith("hold-") for p in [*LAB3_HOLDS.values(), *LAB1_HOLDS.values()])
    for bad, msg in [
        ("pause the worker", "expected"),
        ("explode worker on delivery", "unknown fault"),
        ("pause worker on delivery for ever", "duration"),
        ("pause worker on delivery please", "did not understand"),
    ]:
        with pytest.raises(TriggerError, match=msg):
            parse_trigger(bad)
    # the workload's table decides which points exist: lab1 has no worker, lab3 no lunch
    with pytest.raises(TriggerError, match="lab has no hold point for 'worker on lunch'"):
        _point("pause worker on lunch")
    with pytest.raises(TriggerError, match="no hold point for 'worker on delivery'"):
        _point("pause worker on delivery", LAB1)


def _ctx_with_services(tmp_path: Path):
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    for node in cluster.nodes:
        for name in ("etcd", "worker"):
            ctx.supervisor.start_process(ProcessSpec(node=node, name=name, role=name, argv=[name]))
    return ctx, cluster


def test_targets_resolve_from_the_seeded_stream(tmp_path: Path) -> None:
    ctx, _ = _ctx_with_services(tmp_path)

    def draw(spec: str, seed: int) -> list[Target]:
        return resolve_targets(ctx, None, spec, random.Random(seed))

    assert draw("worker", 3) == draw("worker", 3)
    assert {draw("worker", s)[0].node for s in range(30)} == {"n1", "n2", "n3"}
    assert draw("worker@all", 1) == [Target(node=n, process="worker") for n in ("n1", "n2", "n3")]
    assert draw("n1+n3", 1) == [Target(node="n1"), Target(node="n3")]
    assert len(draw("majority", 1)) == 2 and len(draw("minority", 1)) == 1
    assert draw("etcd@n2", 1) == [Target(node="n2", process="etcd")]
    with pytest.raises(TargetError, match="unknown target 'wizard'"):
        draw("wizard", 1)
    with pytest.raises(TargetError, match="unknown node"):
        draw("n9", 1)


class _HolderWorkload:
    def resolve_role(self, ctx: object, role: str) -> list[Target] | None:
        return [Target(node="n3", process="worker")] if role == "holder" else None


def test_a_workload_can_resolve_its_own_roles(tmp_path: Path) -> None:
    ctx, cluster = _ctx_with_services(tmp_path)
    fault = PauseFault(_HolderWorkload())
    resolved = fault.resolve(ctx, "holder", random.Random(1))
    assert resolved.targets == (Target(node="n3", process="worker"),)
    fid = fault.start(ctx, resolved)
    assert cluster.process_state("n3", "worker") == "T"
    ctx.faults.heal(fid)
    assert cluster.process_state("n3", "worker") == "S"


def test_pause_of_a_node_stops_every_process_there(tmp_path: Path) -> None:
    ctx, cluster = _ctx_with_services(tmp_path)
    fid = PauseFault().start(ctx, PauseFault().resolve(ctx, "n2", random.Random(1)))
    assert [cluster.process_state("n2", p) for p in ("etcd", "worker")] == ["T", "T"]
    assert cluster.process_state("n1", "worker") == "S"
    ctx.faults.heal(fid)
    assert [cluster.process_state("n2", p) for p in ("etcd", "worker")] == ["S", "S"]


def test_kill_holds_the_process_down_until_the_heal(tmp_path: Path) -> None:
    ctx, cluster = _ctx_with_services(tmp_path)
    ctx.supervisor.watch()
    try:
        before = cluster.pid("n1", "etcd")
        fid = KillFault().start(ctx, KillFault().resolve(ctx, "etcd@n1", random.Random(1)))
        time.sleep(0.3)  # several supervisor rounds and restart delays
        assert cluster.pid("n1", "etcd") is None
        ctx.faults.heal(fid)
        assert cluster.pid("n1", "etcd") not in (None, before)
    finally:
        ctx.supervisor.stop()


def test_heal_waits_for_a_running_apply_and_close_refuses_new_faults(tmp_path: Path) -> None:
    history = HistoryRecorder(tmp_path / "h.jsonl", lambda: 0.0)
    ledger = FaultLedger(history, tmp_path / "faults.json")
    applying, undone = threading.Event(), []

    def apply() -> list[dict]:
        applying.set()
        time.sleep(0.3)
        return [{"node": "n1"}]

    t = threading.Thread(target=lambda: ledger.start("pause", apply, lambda: undone.append(1)))
    t.start()
    applying.wait(2)
    assert ledger.shutdown() == 1  # while apply is still sleeping
    t.join()
    assert undone == [1]
    with pytest.raises(LedgerClosed):
        ledger.start("pause", lambda: [], lambda: None)
    history.close()
    phases = [(o.f, o.extra["phase"]) for o in read_history(tmp_path / "h.jsonl").records]
    assert phases == [("pause", "start")] * 2 + [("heal-pause", "heal")] * 2


def test_a_spec_becomes_schedules_and_triggers(tmp_path: Path) -> None:
    class Wl:
        fault_points: dict = {}
        hold_points = LAB3_HOLDS

        def pause_target(self, ctx: object) -> None:
            return None

    spec = TestSpec(
        workload="lab3",
        seed=3,
        nemesis=("pause", "partition:halves"),
        triggers=("kill relay before publish",),
        schedule={"steps": [{"at": 1.0, "fault": "freeze", "target": "n2", "duration": 2.0}]},
    )
    kinds = [type(n) for n in make_nemeses(Wl(), spec)]
    assert kinds == [ScheduleNemesis, ScheduleNemesis, TriggerNemesis]


def test_lab1_roles_are_told_from_the_latest_events_and_standby_is_everyone_else(
    tmp_path: Path,
) -> None:
    import json

    from chaos.workloads.lab1.workload import Lab1

    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    for node in cluster.nodes:
        ctx.supervisor.start_process(
            ProcessSpec(node=node, name="orders", role="orders", argv=["orders"])
        )
    lab1 = Lab1()
    rng = random.Random(1)
    # nobody holds the lock yet: neither role has a player (a fault skips the step)
    assert resolve_targets(ctx, lab1, "holder", rng) == []
    assert resolve_targets(ctx, lab1, "standby", rng) == []
    # n2's grant, written by its service; nothing has polled the events since
    (tmp_path / "live" / "events").mkdir(parents=True)
    grant = {"mono": time.monotonic(), "node": "n2", "component": "orders",
             "kind": "lock-acquired", "data": {"token": 1, "night": 1}}  # fmt: skip
    (tmp_path / "live" / "events" / "n2-orders.jsonl").write_text(json.dumps(grant) + "\n")
    assert resolve_targets(ctx, lab1, "holder", rng) == [Target(node="n2", process="orders")]
    assert resolve_targets(ctx, lab1, "standby", rng) == [
        Target(node="n1", process="orders"),
        Target(node="n3", process="orders"),
    ]


def test_a_fault_named_alone_takes_the_workloads_aim_and_a_written_target_wins() -> None:
    from chaos.core.capabilities import FaultAims
    from chaos.workloads.lab1.workload import Lab1

    assert isinstance(Lab1(), FaultAims)

    def steps(wl: object, *nemesis: str) -> list[str | None]:
        spec = TestSpec(workload="lab1", seed=3, nemesis=nemesis)
        (sched,) = make_nemeses(wl, spec)
        assert isinstance(sched, ScheduleNemesis)
        return sorted({s.target for s in sched.steps}, key=str)

    # lab1 aims `clock` at the standbys' clocks, 4 s ahead; a target the user wrote is kept
    assert steps(Lab1(), "clock") == ["skew=4:standby"]
    assert steps(Lab1(), "clock:strobe=2:holder") == ["strobe=2:holder"]
    # a fault it has no aim for, and a workload without aims, keep "no target"
    assert steps(Lab1(), "kill") == [None]

    class Plain:
        fault_points: dict = {}

    assert steps(Plain(), "clock") == [None]


def test_a_step_aimed_at_a_role_nobody_plays_yet_waits_for_a_player(tmp_path: Path) -> None:
    from chaos.core.target import Resolved, RoleUnplayed
    from chaos.nemesis.plan import Step

    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    asked: list[float] = []
    applied: list[str] = []

    class RoleFault:
        name = "probe"

        def resolve(self, ctx: object, spec: str | None, rng: object) -> Resolved:
            # played from the third look on (counted, not timed: a loaded machine looks less often)
            asked.append(time.monotonic())
            if len(asked) < 3:
                raise RoleUnplayed("probe standby: nobody plays standby right now")
            return Resolved(spec=spec or "", targets=(Target(node="n2"),))

        def start(self, ctx: object, resolved: Resolved, intent: object = None) -> int:
            applied.append(resolved.spec)
            return ctx.faults.start("probe", lambda: [], lambda: {})  # type: ignore[attr-defined]

    never = time.monotonic() + 100.0

    class NeverPlayed(RoleFault):
        def resolve(self, ctx: object, spec: str | None, rng: object) -> Resolved:
            if time.monotonic() < never:
                raise RoleUnplayed("probe holder: nobody plays holder right now")
            raise AssertionError("unreachable")

    steps = [
        Step(index=0, at=0.0, fault="probe", target="standby", duration=0.1),
        Step(index=1, at=0.0, fault="lost", target="holder", duration=0.1),
    ]
    sched = ScheduleNemesis(steps, {"probe": RoleFault(), "lost": NeverPlayed()})  # type: ignore[dict-item]
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="nobody plays holder"):
        sched.run(ctx)
    # the first step looked again until its role was played, then ran; the second gave up after
    # the least wait instead of holding the run forever
    assert applied == ["standby"]
    assert len(asked) == 3
    # the least wait is 2 s; "forever" would be the 100 s of NeverPlayed
    assert time.monotonic() - t0 < 10.0
