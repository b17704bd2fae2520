"""The one reaper (chaos.cluster.node_kit.reap) over an in-memory transport: it undoes each kind of
fault a dead run can leave, touches nothing else, and a node that is gone (or a transport that
breaks its contract by raising) costs only that node's step.

The SSH backend's transport is also driven here over a local shell standing in for the SSH
connection, against real processes of this machine: a stopped one is resumed, by its pid file's
name, and a node that cannot be reached is asked once, not once per step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from chaos.cluster import clocks
from chaos.cluster.base import ClusterError, ExecResult
from chaos.cluster.docker.reap import HANDLED_OPS as DOCKER_OPS
from chaos.cluster.net import chain_name
from chaos.cluster.node_kit import proctable, reap
from chaos.cluster.node_kit.transport import Proc, Thawing, Transport
from chaos.cluster.node_kit.undo import UndoOp
from chaos.cluster.ssh import remote
from chaos.cluster.ssh.conn import Connection
from chaos.cluster.ssh.nodes import NodeSpec

RUN = "20261201T000000-ab12"
CHAIN = chain_name(RUN)


@dataclass
class MemNode:
    """A node held in memory: its iptables chains, its process table, its freezer."""

    node: str
    chains: dict[str, list[str]] = field(default_factory=dict)
    procs: dict[int, Proc] = field(default_factory=dict)
    frozen: bool = False
    gone: bool = False
    log: list[str] = field(default_factory=list)

    def exec(self, argv: Sequence[str], *, timeout: float) -> ExecResult:
        if self.gone:
            return ExecResult(255, f"{self.node}: unreachable")
        assert list(argv[:3]) == ["iptables", "-w", "5"], argv
        op, chain = argv[3], argv[4]
        if chain not in self.chains:
            return ExecResult(1, "iptables: No chain/target/match by that name.")
        self.log.append(f"iptables {op} {chain}")
        if op == "-F":
            self.chains[chain] = []
            return ExecResult(0, "")
        assert op == "-S", argv
        return ExecResult(0, "".join(f"{r}\n" for r in [f"-N {chain}", *self.chains[chain]]))

    def processes(self) -> list[Proc]:
        return [] if self.gone else list(self.procs.values())

    def signal(self, pid: int, sig: int) -> bool:
        if self.gone or pid not in self.procs:
            return False
        self.log.append(f"signal {sig} {pid}")
        if sig == signal.SIGCONT and self.procs[pid].state == "T":
            p = self.procs[pid]
            self.procs[pid] = Proc(pid=p.pid, state="S", name=p.name, token=p.token)
        return True


@dataclass
class FreezableNode(MemNode):
    def thaw(self) -> bool:
        if self.gone or not self.frozen:
            return False
        self.log.append("thaw")
        self.frozen = False
        return True


class Raising(MemNode):
    """A transport that breaks its contract: every call raises."""

    def exec(self, argv: Sequence[str], *, timeout: float) -> ExecResult:
        raise RuntimeError("boom")

    def processes(self) -> list[Proc]:
        raise RuntimeError("boom")


def _ledger(tmp_path: Path, faults: list[dict[str, object]]) -> Path:
    live = tmp_path / "run" / "live"
    live.mkdir(parents=True)
    (live.parent / "faults.json").write_text(json.dumps(faults))
    return live


def _nodes() -> tuple[FreezableNode, FreezableNode]:
    drop = "-A {c} -s 10.0.0.{i} -j DROP"
    n1 = FreezableNode(
        "n1",
        chains={CHAIN: [drop.format(c=CHAIN, i=3)], "CHAOS-EGRESS": ["-A CHAOS-EGRESS -j REJECT"]},
        procs={
            101: Proc(pid=101, state="T", token="101:555"),  # the ledger names it
            102: Proc(pid=102, state="S", token="102:556"),  # running: left alone
        },
    )
    n2 = FreezableNode(
        "n2",
        chains={CHAIN: [], "CHAOS-lossy": ["-A CHAOS-lossy -m statistic -j DROP"]},
        procs={201: Proc(pid=201, state="T", name="worker")},  # stopped, unrecorded
        frozen=True,
    )
    return n1, n2


def test_the_reaper_undoes_each_kind_of_fault_and_nothing_else(tmp_path: Path) -> None:
    live = _ledger(
        tmp_path,
        [
            {"reap": [{"op": "sigcont", "token": "101:555", "node": "n1", "process": "orders"}]},
            {"reap": [{"op": "iptables-flush", "chain": "CHAOS-lossy"}]},
            {"reap": [{"op": "thaw", "node": "n2"}]},
        ],
    )
    clocks.make_clock_dir(live)
    clocks.write_offset(clocks.clock_file(live, "n1", "orders"), 4.0)
    clocks.write_offset(clocks.clock_file(live, "n2", "orders"), 0.0)
    n1, n2 = _nodes()
    nodes: list[Transport] = [n1, n2]

    done = reap.heal(RUN, nodes, live=str(live))

    assert not n2.frozen and not n1.frozen
    assert n1.chains[CHAIN] == [] and n2.chains["CHAOS-lossy"] == []
    assert n1.chains["CHAOS-EGRESS"] == ["-A CHAOS-EGRESS -j REJECT"], "not the run's fault chain"
    assert [p.state for p in n1.procs.values()] == ["S", "S"] and n2.procs[201].state == "S"
    assert f"signal {int(signal.SIGCONT)} 102" not in n1.log, "a running process is not signalled"
    assert clocks.read_offset(clocks.clock_file(live, "n1", "orders")) == 0.0
    assert sorted(done) == sorted(
        [
            "healed: thawed n2",
            f"healed: flushed {CHAIN} (1 rule(s)) on n1",
            "healed: flushed CHAOS-lossy (1 rule(s)) on n2",
            "healed: reset the clock of n1-orders",
            "healed: resumed stopped orders (pid 101) on n1",  # named by the ledger's token
            "healed: resumed stopped worker (pid 201) on n2",  # named by its transport
        ]
    )
    # a frozen node is thawed before anything else is done on it
    assert n2.log[0] == "thaw" and n2.log[-1].startswith("signal")
    # healing twice does nothing more
    assert reap.heal(RUN, nodes, live=str(live)) == []


def test_a_gone_node_and_a_raising_transport_cost_only_their_own_steps(tmp_path: Path) -> None:
    live = _ledger(tmp_path, [])
    n1, n2 = _nodes()
    n1.gone = True
    broken = Raising("n3", chains={CHAIN: ["-A x"]}, procs={301: Proc(pid=301, state="T")})
    done = reap.heal(RUN, [n1, broken, n2], live=str(live))
    assert n1.chains[CHAIN] != [] and n1.procs[101].state == "T", "a gone node is not reached"
    assert n2.chains[CHAIN] == [] and n2.procs[201].state == "S" and not n2.frozen
    assert "could not flush the run's chains on n3 (RuntimeError: boom)" in done, done
    assert "could not resume the processes on n3 (RuntimeError: boom)" in done, done
    assert not any("n1" in d for d in done), done


def test_only_chain_shaped_names_of_the_ledger_are_flushed(tmp_path: Path) -> None:
    bad = ["INPUT", "CHAOS-EGRESS; iptables -F", "DOCKER-USER", "", "CHAOS-" + "x" * 40]
    live = _ledger(tmp_path, [{"reap": [{"op": "iptables-flush", "chain": c} for c in bad]}])
    node = MemNode("n1", chains={c: ["-A rule"] for c in ["INPUT", "DOCKER-USER", CHAIN]})
    reap.heal(RUN, [node], live=str(live))
    assert node.chains == {"INPUT": ["-A rule"], "DOCKER-USER": ["-A rule"], CHAIN: []}
    assert reap.run_chains(RUN, []) == {CHAIN}


def test_each_backend_handles_the_ops_its_transport_allows() -> None:
    assert set(UndoOp) == reap.OPS
    assert DOCKER_OPS == reap.OPS
    ssh_ops = reap.OPS - {UndoOp.THAW, UndoOp.CLOCK_RESET}
    assert ssh_ops == remote.HANDLED_OPS
    assert isinstance(FreezableNode("n1"), Thawing) and not isinstance(MemNode("n1"), Thawing)


# ---------------------------------------------------------------- the SSH transport, locally


class LocalConn:
    """A Connection's ``run`` over a local shell, as root (no sudo), counting its calls."""

    def __init__(self, *, reachable: bool = True) -> None:
        self.node = NodeSpec(name="n1", host="127.0.0.1", user="root")
        self.reachable = reachable
        self.calls = 0

    def run(self, script: str, *, timeout: float = 60.0) -> ExecResult:
        self.calls += 1
        if not self.reachable:
            raise ClusterError(f"{self.node.label}: unreachable within 3 s (TimeoutError)")
        p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=timeout)
        return ExecResult(p.returncode, p.stdout + p.stderr)


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(remote, "RUNS", str(tmp_path))
    d = tmp_path / RUN
    (d / "pids").mkdir(parents=True)
    yield d


def test_the_ssh_transport_resumes_a_stopped_process_by_its_pid_file(run_dir: Path) -> None:
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a session leader, as spawned
    try:
        os.kill(p.pid, signal.SIGSTOP)
        end = time.monotonic() + 5
        while proctable.state(p.pid) != "T" and time.monotonic() < end:
            time.sleep(0.01)
        (run_dir / "pids" / "worker.pid").write_text(f"{p.pid}\n")
        t = remote.SSHTransport(cast(Connection, LocalConn()), RUN)
        assert t.processes() == [Proc(pid=p.pid, state="T", name="worker", token=f"n1:{p.pid}")]
        done = reap.heal(RUN, [t], live=None)
        assert done == [f"healed: resumed stopped worker (pid {p.pid}) on n1"]
        assert proctable.state(p.pid) in ("S", "R")
    finally:
        p.kill()
        p.wait()
    assert not t.signal(p.pid, signal.SIGCONT), "a gone process: not delivered, no raise"


def test_an_unreachable_ssh_node_is_asked_once_and_removal_says_so(run_dir: Path) -> None:
    conn = LocalConn(reachable=False)
    t = remote.SSHTransport(cast(Connection, conn), RUN)
    assert reap.heal(RUN, [t], live=None) == []
    assert conn.calls == 1 and t.gone is not None and "unreachable" in t.gone
    assert not t.exec(["true"], timeout=1).ok and t.processes() == [] and conn.calls == 1
    with pytest.raises(ClusterError, match=r"n1 .*unreachable"):
        remote.remove_run(cast(Connection, LocalConn(reachable=False)), RUN)
