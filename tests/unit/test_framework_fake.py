"""The framework on an in-memory cluster: supervisor restarts, the fault ledger, the pause nemesis.

No Docker: these test chaos's own machinery (as Jepsen tests itself with atom-db), never a lab.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chaos.checkers.completeness import completeness
from chaos.checkers.faults import fault_intervals
from chaos.checkers.verdict import Verdict
from chaos.cluster.base import Cluster, ClusterError, control_channel
from chaos.cluster.fake import FakeCluster
from chaos.core.context import RunContext
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec, Supervisor
from chaos.core.target import Resolved, Target
from chaos.histories.jsonl import HistoryRecorder, read_history
from chaos.histories.ops import ABSTAINED
from chaos.histories.store import StoredRun
from chaos.nemesis import table
from chaos.nemesis.pause import PauseFault, PauseNemesis, pause


def make_ctx(tmp_path: Path, cluster: FakeCluster) -> RunContext:
    origin = time.monotonic()
    history = HistoryRecorder(tmp_path / "history.jsonl", lambda: time.monotonic() - origin)
    sup = Supervisor(cluster, restart_delay=0.05)
    return RunContext(
        spec=TestSpec(workload="fake", seed=1),
        cluster=cluster,
        channel=control_channel(cluster),
        run_dir=tmp_path,
        live=tmp_path / "live",
        origin=origin,
        history=history,
        events=EventTail(tmp_path / "live", origin),
        supervisor=sup,
        faults=FaultLedger(history, tmp_path / "faults.json", kinds=table.recorded()),
        progress=lambda m: None,
    )


def test_fake_cluster_satisfies_the_contract() -> None:
    c: Cluster = FakeCluster()
    assert c.nodes == ["n1", "n2", "n3"]


def test_supervisor_restarts_a_crashed_process_but_not_a_held_one(tmp_path: Path) -> None:
    cluster = FakeCluster()
    restarted: list[tuple[str, int]] = []
    sup = Supervisor(
        cluster, restart_delay=0.05, on_restart=lambda s, pid: restarted.append((s.name, pid))
    )
    sup.start_process(ProcessSpec(node="n1", name="worker", argv=["w"]))
    sup.start_process(ProcessSpec(node="n2", name="worker", argv=["w"]))
    sup.watch()
    try:
        first = cluster.pid("n1", "worker")
        cluster.crash("n1", "worker")
        sup.hold("n2", "worker")
        cluster.crash("n2", "worker")
        deadline = time.monotonic() + 3
        while not restarted and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        assert [r[0] for r in restarted] == ["worker"]
        assert cluster.pid("n1", "worker") not in (None, first)
        assert cluster.pid("n2", "worker") is None, "a held process waits for its nemesis"
        sup.release("n2", "worker")
        assert cluster.pid("n2", "worker") is not None
    finally:
        sup.stop()


class _BarrierCluster(FakeCluster):
    """Each node's first start waits until every node's first start began: starts made one
    after another break the barrier (its timeout) instead of passing."""

    def __init__(self, nodes: int, fail: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.barrier = threading.Barrier(nodes, timeout=5)
        self.fail = fail
        self.order: list[tuple[str, str]] = []

    def spawn(self, node: str, name: str, argv: list[str], **kw: Any) -> int:
        if name == "api":
            self.barrier.wait()
        if (node, name) == self.fail:
            raise ClusterError(f"{name} did not start on {node}")
        self.order.append((node, name))
        return super().spawn(node, name, argv, **kw)


def test_start_processes_starts_the_nodes_side_by_side_each_in_its_order() -> None:
    nodes = ["n1", "n2", "n3"]
    cluster = _BarrierCluster(len(nodes))
    sup = Supervisor(cluster)
    specs = [ProcessSpec(node=n, name=r, argv=[r]) for n in nodes for r in ("api", "worker")]
    sup.start_processes(specs)
    assert not cluster.barrier.broken
    for n in nodes:
        assert [x for x in cluster.order if x[0] == n] == [(n, "api"), (n, "worker")]
    assert {(s.node, s.name) for s in sup.processes()} == {(s.node, s.name) for s in specs}


def test_start_processes_raises_a_failed_start_after_the_other_nodes_started() -> None:
    cluster = _BarrierCluster(2, fail=("n2", "api"))
    sup = Supervisor(cluster)
    specs = [ProcessSpec(node=n, name=r, argv=[r]) for n in ("n1", "n2") for r in ("api", "worker")]
    with pytest.raises(ClusterError, match="api did not start on n2"):
        sup.start_processes(specs)
    assert cluster.order == [("n1", "api"), ("n1", "worker")]


def test_pause_stops_then_resumes_and_records_a_jepsen_shaped_pair(tmp_path: Path) -> None:
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    ctx.supervisor.start_process(ProcessSpec(node="n2", name="worker", argv=["w"]))
    pause(ctx, Target(node="n2", process="worker"), 0.05)
    assert cluster.procs[("n2", "worker")].signals == [signal.SIGSTOP, signal.SIGCONT]
    assert cluster.process_state("n2", "worker") == "S"
    ctx.history.close()
    ops = read_history(tmp_path / "history.jsonl").records
    assert [(o.type.value, o.extra["phase"]) for o in ops] == [
        ("info", "start"), ("info", "start"), ("info", "heal"), ("info", "heal"),
    ]  # fmt: skip
    (band,) = fault_intervals(ops)
    assert band.fault == "pause" and band.end is not None and band.touches("n2", "worker")


def test_a_pause_inside_a_freeze_holds_from_the_thaw_and_its_heal_resumes(tmp_path: Path) -> None:
    # a late step can land inside another's freeze (seen under load with the seed test's four
    # faults): the pause must hold, not fail on a state D that a frozen process shows
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    ctx.supervisor.start_process(ProcessSpec(node="n3", name="worker", argv=["w"]))
    cluster.freeze("n3")
    assert cluster.process_state("n3", "worker") == "D"
    fid = PauseFault().start(
        ctx, Resolved(spec="worker@n3", targets=(Target(node="n3", process="worker"),))
    )
    (done,) = [o for o in ctx.history.ops if o.extra.get("phase") == "start" and "pid" in o.value]
    assert done.value["signal"] == "SIGSTOP"
    assert done.value["state"] == "frozen" and done.value["pending"] is True
    cluster.thaw("n3")
    assert cluster.process_state("n3", "worker") == "T", "stopped the instant the node thawed"
    ctx.faults.heal(fid)
    assert cluster.process_state("n3", "worker") == "S"
    # and a pause healed while its node is still frozen leaves nothing stopped at the thaw
    cluster.freeze("n3")
    fid = PauseFault().start(
        ctx, Resolved(spec="worker@n3", targets=(Target(node="n3", process="worker"),))
    )
    ctx.faults.heal(fid)
    cluster.thaw("n3")
    assert cluster.process_state("n3", "worker") == "S"


def test_heal_all_undoes_what_a_stopped_nemesis_left_active(tmp_path: Path) -> None:
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    ctx.supervisor.start_process(ProcessSpec(node="n1", name="worker", argv=["w"]))
    t = threading.Thread(target=pause, args=(ctx, Target(node="n1", process="worker"), 60.0))
    t.start()
    deadline = time.monotonic() + 3
    while cluster.process_state("n1", "worker") != "T" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.process_state("n1", "worker") == "T"
    assert ctx.faults.heal_all() == 1  # what the orchestrator does on SIGINT
    assert cluster.process_state("n1", "worker") == "S"
    ctx.stop.set()
    t.join(5)
    assert not t.is_alive()
    heals = [o for o in ctx.history.ops if o.extra.get("phase") == "heal"]
    assert len(heals) == 2, "healed once, although both the nemesis and heal-all tried"


def test_an_aimed_pause_that_finds_no_aim_abstains_and_the_run_is_unknown(
    tmp_path: Path,
) -> None:
    """Aim or abstain (issue 29): a pause whose aim is never there (a solution that hides what
    the aim looks for) pauses nothing else instead, and the run says it tested nothing."""
    cluster = FakeCluster()
    ctx = make_ctx(tmp_path, cluster)
    for node in cluster.nodes:
        ctx.supervisor.start_process(
            ProcessSpec(node=node, name="etcd", argv=["e"], role="etcd", infrastructure=True)
        )
        ctx.supervisor.start_process(ProcessSpec(node=node, name="api", argv=["a"], role="api"))
    nemesis = PauseNemesis(lambda c: None, duration=0.05, interval=1.0, once=True,
                           wait_for_target=0.3)  # fmt: skip
    nemesis.run(ctx)
    assert not [k for k, p in cluster.procs.items() if signal.SIGSTOP in p.signals]
    abstained = [o for o in ctx.history.ops if o.extra.get(ABSTAINED)]
    assert len(abstained) == 1 and abstained[0].f == "pause"
    run = StoredRun(path=tmp_path, spec={}, history=list(ctx.history.ops), events=[],
                    final={"counter": 0}, schedule=[], problems=[])  # fmt: skip
    result = completeness(run)
    assert result.verdict is Verdict.UNKNOWN
    assert "the pause fault never found its aim" in result.summary
    # the same run with its aim found is judged on its record
    found = [msgspec.structs.replace(o, extra={}, value=None) for o in run.history]
    run = dataclasses.replace(run, history=found)
    assert completeness(run).verdict is Verdict.VALID


def test_a_trigger_that_never_fired_leaves_the_run_unknown(tmp_path: Path) -> None:
    """A run asked for a trigger that never fired tested nothing it was asked to (lab1's nights
    once ran before the arming reached the nodes): never valid, on any workload."""
    from chaos.histories.ops import Op

    phrase = "pause holder after write of lock for 5s"
    fired = Op(index=0, time=1.0, process="nemesis", type="info", f="pause", value=None,
               extra={"trigger": {"phrase": phrase, "decided_by": "etcd-proxy"}})  # fmt: skip
    run = StoredRun(path=tmp_path, spec={"triggers": [phrase]}, history=[],
                    events=[], final={"counter": 0}, schedule=[], problems=[])  # fmt: skip
    run = dataclasses.replace(run, history=[msgspec.structs.replace(fired, extra={})])
    result = completeness(run)
    assert result.verdict is Verdict.UNKNOWN
    assert f"the trigger '{phrase}' never fired" in result.summary
    assert completeness(dataclasses.replace(run, history=[fired])).verdict is Verdict.VALID


class _CopyingCluster(FakeCluster):
    """A cluster whose nodes do not see the control folder (as SSH hosts): it copies."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: dict[tuple[str, str], bytes] = {}

    def control_put(self, folder: str, name: str, data: bytes, *, on: str | None = None) -> None:
        self.copies[(folder, name)] = data

    def control_remove(self, folder: str, name: str) -> None:
        self.copies.pop((folder, name), None)

    def control_exists(self, node: str, folder: str, name: str) -> bool:
        return (folder, name) in self.copies


def test_the_context_asks_for_the_control_channel_once_and_uses_it(tmp_path: Path) -> None:
    plain = make_ctx(tmp_path / "plain", FakeCluster())
    assert plain.channel is None
    plain.write_control("hold-x", "1")
    assert (plain.control_dir() / "hold-x").read_text() == "1"

    cluster = _CopyingCluster()
    ctx = make_ctx(tmp_path / "copying", cluster)
    assert ctx.channel is cluster
    ctx.write_control("hold-x", "1", node="n2")
    # the host keeps the record of what was armed; the nodes get their copy
    assert (ctx.control_dir("n2") / "hold-x").exists()
    assert cluster.copies == {("n2", "hold-x"): b"1"}
    assert ctx.control_exists("hold-x", node="n2", on="n2")
    ctx.remove_control("hold-x", node="n2")
    assert cluster.copies == {} and not (ctx.control_dir("n2") / "hold-x").exists()
    # no claim files where nodes hold copies: the backend's arbiter granted one claim
    assert ctx.claimed("p", "g") and ctx.claim("p", "g") is None
