"""Fault points confirmed only by what the host observed (chaos.nemesis.claimpoint, hostkill,
chaos.workloads.lab3.confirm).

The claim of a point is the code under test's word: these claim as a hostile solution would
(an invented pid, another component, a process that exits by itself) on the in-memory cluster,
and check that the orchestrator acts only on the pid the host knows, makes the crash itself, and
that a firing whose facts the host did not see never counts.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers.verdict import Verdict
from chaos.cluster.fake import FakeCluster
from chaos.core.context import RunContext
from chaos.core.supervisor import ProcessSpec
from chaos.histories.jsonl import read_history
from chaos.nemesis import claimpoint, hostkill
from chaos.nemesis.claimpoint import ClaimedArming
from chaos.nemesis.faultpoint import FaultPointNemesis
from chaos.orchestrator.run import make_live
from chaos.workloads.lab3 import checkers, confirm
from tests.unit.test_framework_fake import make_ctx
from tests.unit.test_lab3_checkers import ALL_DONE, _scenario_run, final_state

POINT = "worker-crash-before-ack"


@pytest.fixture(autouse=True)
def _answers_kept_briefly(monkeypatch: pytest.MonkeyPatch) -> None:
    # no process here reads the orchestrator's answer: it is kept for a moment only
    monkeypatch.setattr(claimpoint, "ANSWER_WAIT", 0.1)


def _ctx(tmp_path: Path) -> tuple[RunContext, FakeCluster]:
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    make_live(ctx.live, 3)
    for node in cluster.nodes:
        ctx.supervisor.start_process(ProcessSpec(node=node, name="worker", argv=["w"]))
    return ctx, cluster


def _claimer(ctx: RunContext, claim: Callable[[RunContext], dict[str, Any]]) -> threading.Thread:
    """A process reaching the point: it reads the arming's generation and claims it in its own
    words (what ``claim`` returns)."""

    def run() -> None:
        arm = ctx.live / "control" / "any" / POINT
        deadline = time.monotonic() + 5
        while not arm.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        gen = json.loads(arm.read_text())["gen"]
        (ctx.live / "claims" / f"any-{POINT}.{gen}").write_text(json.dumps(claim(ctx)))

    t = threading.Thread(target=run)
    t.start()
    return t


def _fire(ctx: RunContext, claim: Callable[[RunContext], dict[str, Any]]) -> dict[str, Any]:
    observed: list[float] = []

    def observe(c: RunContext) -> dict[str, Any]:
        observed.append(c.now())
        return {"looked": True}

    answers: list[dict[str, Any]] = []
    write = ctx.write_control

    def spy(name: str, text: str, **kw: Any) -> None:
        if name == f"{POINT}.answer":
            answers.append(json.loads(text))
        write(name, text, **kw)

    ctx.write_control = spy  # type: ignore[method-assign]
    arming = ClaimedArming(crashes=True)
    nem = FaultPointNemesis(POINT, component="worker", arming=arming, wait=3.0, observe=observe)
    t = _claimer(ctx, claim)
    nem.run(ctx)
    t.join()
    heals = [
        o for o in read_history(ctx.run_dir / "history.jsonl").records
        if o.f == f"heal-{POINT}" and isinstance(o.value, dict)
    ]  # fmt: skip
    # the answer is gone once the fault healed: nothing is left armed or granted
    assert not (ctx.live / "control" / "any" / f"{POINT}.answer").exists()
    return {**heals[-1].value, "_observed": observed, "_answers": answers}


def test_an_honest_claim_is_killed_by_the_host_by_the_pid_it_knows(tmp_path: Path) -> None:
    ctx, cluster = _ctx(tmp_path)
    before = cluster.pid("n2", "worker")
    fired = _fire(ctx, lambda c: {"node": "n2", "component": "worker", "pid": before})
    assert fired["killed_pid"] == before and fired["signal"] == "SIGKILL"
    assert fired["exit_seen_at"] >= fired["signalled_at"]
    assert fired["restarted_pid"] == cluster.pid("n2", "worker") != before
    assert fired["_observed"], "the state was read before the kill"
    # the host's SIGKILL reached exactly that process
    assert [p for (n, _, p) in cluster.spawned if n == "n2"] == [before, fired["restarted_pid"]]
    (answer,) = fired["_answers"]
    assert answer["granted"] is True and answer["pid"] == before


def test_a_claim_with_an_invented_pid_is_refused_and_nothing_is_killed(tmp_path: Path) -> None:
    ctx, cluster = _ctx(tmp_path)
    fired = _fire(ctx, lambda c: {"node": "n1", "component": "worker", "pid": 4000000})
    assert "host's worker on n1 is pid" in fired["refused"]
    assert "killed_pid" not in fired and "fired_at" not in fired
    assert not fired["_observed"]
    assert all(not p.signals for p in cluster.procs.values())
    (answer,) = fired["_answers"]
    assert answer["granted"] is False
    got = checkers.scenario_fired(_scenario_run(POINT, fired, final_state(10, ALL_DONE)))
    assert got.verdict is Verdict.UNKNOWN
    assert "the host refused its claim: the claim names pid 4000000" in got.summary


def test_a_claim_for_another_component_is_refused(tmp_path: Path) -> None:
    ctx, cluster = _ctx(tmp_path)
    fired = _fire(ctx, lambda c: {"node": "n1", "component": "relay", "pid": 1})
    assert "not a worker of this run" in fired["refused"]
    assert all(not p.signals for p in cluster.procs.values())


def test_a_process_that_exits_by_itself_at_its_claim_is_not_a_host_crash(tmp_path: Path) -> None:
    ctx, cluster = _ctx(tmp_path)
    pid = cluster.pid("n3", "worker")

    def claim_and_exit(c: RunContext) -> dict[str, Any]:
        ctx.supervisor.hold("n3", "worker")  # no restart before the orchestrator looks
        cluster.crash("n3", "worker")  # os._exit at the claim
        return {"node": "n3", "component": "worker", "pid": pid}

    old = cluster.procs[("n3", "worker")]
    fired = _fire(ctx, claim_and_exit)
    assert "not running" in fired["refused"]
    assert old.signals == []


def test_the_host_does_not_signal_a_process_that_is_no_longer_the_pid_it_checked(
    tmp_path: Path,
) -> None:
    ctx, cluster = _ctx(tmp_path)
    pid = cluster.pid("n1", "worker")
    assert pid is not None
    old = cluster.procs[("n1", "worker")]
    cluster.crash("n1", "worker")  # gone between the check and the kill
    got = hostkill.crash(ctx, "n1", "worker", pid)
    assert "exit_seen_at" not in got and "was not running as pid" in got["error"]
    assert old.signals == []  # never signalled: its exit was its own
    assert got["restarted_pid"] != pid  # and it is running again all the same
    ok, why = confirm.host_crash({"process": "worker", "node": "n1", **got})
    assert not ok and "the host did not observe worker on n1 exit after its own SIGKILL" in why


# ------------------------------------------------------------------ the state at the claim


def _at(committed: list[str], floor: int, delivered: int, pending: int) -> dict[str, Any]:
    msgs = {str(i): {"task_id": f"t{i}", "event_id": f"e-t{i}"} for i in (1, 2, 3)}
    consumer = {"ack_floor_stream_seq": floor, "delivered_stream_seq": delivered,
                "num_ack_pending": pending}  # fmt: skip
    return {"at_fire": {"committed_tasks": committed, "messages": msgs, "consumer": consumer}}


def test_a_split_delivery_is_read_from_etcd_and_the_brokers_consumer() -> None:
    order, why = confirm.split_delivery(_at(["t1"], 0, 1, 1))
    assert order == "commit-first" and "task t1 committed and not ACKed" in why
    order, why = confirm.split_delivery(_at([], 1, 1, 0))
    assert order == "ack-first" and "task t1 ACKed and not committed" in why
    # claimed before anything was delivered (a thread claiming as soon as the point is armed)
    order, why = confirm.split_delivery(_at([], 0, 0, 0))
    assert order is None and "did not observe the scenario's precondition" in why
    # delivered, not committed, not ACKed: the point is past the commit, this is before it
    order, _ = confirm.split_delivery(_at([], 0, 1, 1))
    assert order is None
    # one pending of three delivered past the floor: it is the one after the floor (t1), so t2's
    # commit beside an ACKed message is no split
    order, why = confirm.split_delivery(_at(["t1", "t2"], 0, 3, 1))
    assert order == "commit-first" and "task t1 committed" in why and "t2" not in why
    order, _ = confirm.split_delivery(_at(["t2"], 0, 3, 1))
    assert order is None
    order, why = confirm.split_delivery(_at(["t2", "t3"], 0, 3, 2))
    assert order == "commit-first" and "one of task t2, t3" in why
    order, why = confirm.split_delivery({"at_fire": {"error": "TimeoutError: etcd"}})
    assert order is None and "could not read the state" in why


def test_a_worker_crash_claimed_where_its_precondition_did_not_hold_does_not_count() -> None:
    crash = {"node": "n1", "process": "worker", "pid": 9, "fired_at": 1.0, "killed_pid": 9,
             "signalled_at": 1.1, "exit_seen_at": 1.2, "restarted_pid": 12}  # fmt: skip
    final = {**final_state(10, ALL_DONE),
             "consumer": {"delivered_consumer_seq": 4, "delivered_stream_seq": 3}}  # fmt: skip
    early = {**crash, **_at([], 0, 0, 0)}
    got = checkers.scenario_fired(_scenario_run(POINT, early, final))
    assert got.verdict is Verdict.UNKNOWN
    assert "did not observe the scenario's precondition" in got.summary
    right = {**crash, **_at(["t1"], 0, 1, 1)}
    assert checkers.scenario_fired(_scenario_run(POINT, right, final)).verdict is Verdict.VALID
    # the same state, but the exit was not the host's to see
    unseen = {**right, "exit_seen_at": None, "error": "worker on n1 was not running as pid 9"}
    got = checkers.scenario_fired(_scenario_run(POINT, unseen, final))
    assert (
        got.verdict is Verdict.UNKNOWN
        and "the host did not observe worker on n1 exit" in got.summary
    )


def test_a_relay_crash_needs_an_intent_the_broker_did_not_hold() -> None:
    at = {"pending_event_ids": ["e-t1"], "messages": {"1": {"task_id": "t1", "event_id": "e-t1"}}}
    ok, why = confirm.unpublished_intent({"at_fire": at})
    assert not ok and "did not observe an unpublished intent" in why
    ok, why = confirm.unpublished_intent({"at_fire": {**at, "pending_event_ids": ["e-t2"]}})
    assert ok and "1 of them not in the broker's stream" in why


def test_an_ack_first_split_counts_only_if_the_killed_process_held_the_task() -> None:
    crash = {"node": "n1", "process": "worker", "pid": 9, "fired_at": 1.0, "killed_pid": 9,
             "signalled_at": 1.1, "exit_seen_at": 1.2, "restarted_pid": 12}  # fmt: skip
    split = {**crash, **_at(["t1", "t2"], 3, 3, 0)}  # t3 ACKed, not committed
    lost = {**final_state(5, {"t1": "completed", "t2": "completed", "t3": "pending"})}
    got = checkers.scenario_fired(_scenario_run(POINT, split, lost))
    assert got.verdict is Verdict.VALID and "task t3 never completed after the kill" in got.summary
    # t3 completed after all: its holder was another process, not the one the host killed
    done = checkers.scenario_fired(_scenario_run(POINT, split, final_state(10, ALL_DONE)))
    assert done.verdict is Verdict.UNKNOWN
    assert "another process held it" in done.summary


def test_redeliveries_are_the_brokers_count_not_the_services() -> None:
    from chaos.histories.ops import Event

    forged = [
        Event(time=1.0 + i, node="n1", component="worker", kind="delivery", task_id="t1",
              event_id="e-t1", pid=4000000, data={"num_delivered": 2})
        for i in range(5)
    ]  # fmt: skip
    final = final_state(10, ALL_DONE)
    final["consumer"] = {"delivered_consumer_seq": 3, "delivered_stream_seq": 3}
    r = _scenario_run(POINT, None, final)
    stats = checkers.delivery_stats(dataclasses.replace(r, events=(*r.events, *forged)))
    assert stats.stats["redeliveries"] == 0 and stats.stats["reported_redeliveries"] == 5
    assert "the broker: " in stats.summary and "3 deliveries (0 redeliveries)" in stats.summary


# ------------------------------------------------------------------ triggers


def hold_reached(ctx: RunContext, hold: str, pid: int | None) -> threading.Thread:
    """A thread standing for n1's worker: it claims the first arming of ``hold`` as ``pid`` and
    reports the fault-point event, once; it never reaches the point again."""

    def run() -> None:
        arm = ctx.live / "control" / "any" / hold
        deadline = time.monotonic() + 5
        while not arm.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        gen = json.loads(arm.read_text())["gen"]
        claim = {"node": "n1", "component": "worker", "pid": pid}
        (ctx.live / "claims" / f"any-{hold}.{gen}").write_text(json.dumps(claim))
        ev = {"mono": time.monotonic(), "node": "n1", "component": "worker",
              "kind": "fault-point", "pid": pid, "data": {"point": hold, "hold": True}}  # fmt: skip
        (ctx.live / "events" / "n1-worker.jsonl").write_text(json.dumps(ev) + "\n")

    t = threading.Thread(target=run)
    t.start()
    return t


def test_a_trigger_does_not_fault_a_pid_the_host_does_not_run(tmp_path: Path) -> None:
    from chaos.nemesis.kill import KillFault
    from chaos.nemesis.trigger import TriggerNemesis, bind, parse_trigger
    from chaos.workloads.lab3.workload import Lab3

    ctx, cluster = _ctx(tmp_path)
    tr = bind(parse_trigger("kill worker on delivery"), Lab3(), "lab3")
    assert tr.point is not None
    hold = tr.point.file

    # a thread claims the hold the moment it is armed, and names an invented pid
    t = hold_reached(ctx, hold, 4000000)
    TriggerNemesis(tr, KillFault(), default_duration=0.1, wait=3.0).run(ctx)
    t.join()
    assert all(not p.signals for p in cluster.procs.values())
    ops = read_history(ctx.run_dir / "history.jsonl").records
    assert not [o for o in ops if o.f == "kill"]


def test_the_report_draws_the_hosts_crashes_not_the_services() -> None:
    from chaos.report.loading import EventRow, OpRow
    from chaos.report.page import task_events

    forged = EventRow(1.0, "n1", "worker", "crash", "t1", None, 4000000, {"fault": POINT})
    delivery = EventRow(0.5, "n2", "worker", "delivery", "t1", "e-t1", 7, {})
    killed = {"point": POINT, "node": "n2", "process": "worker", "task_id": "t1",
              "killed_pid": 7, "exit_seen_at": 2.0, "restarted_pid": 9}  # fmt: skip
    heal = OpRow(3, 2.1, "nemesis", "info", f"heal-{POINT}", killed, None, {"phase": "heal"})
    got = task_events([delivery, forged], [heal])
    assert [(e.kind, e.node, e.pid) for e in got] == [("delivery", "n2", 7), ("crash", "n2", 7)]
    assert got[1].time == 2.0 and got[1].data["by"] == "the host"
