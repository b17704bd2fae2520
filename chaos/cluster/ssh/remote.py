"""Shell snippets the SSH backend runs on a node, the node as the reaper reaches it, and removing a
run's traces from one.

Kept apart from the cluster so that the reaper (``chaos cleanup``) removes a dead run's leftovers
with exactly the code a live run's teardown uses: the shared reaper
(``chaos.cluster.node_kit.reap``) heals the node through :class:`SSHTransport`, then
:func:`remove_run` kills the run's processes and deletes its chain and its folder.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from chaos.cluster.base import ClusterError, ExecResult
from chaos.cluster.net import chain_name
from chaos.cluster.node_kit import reap
from chaos.cluster.node_kit.proctable import STATUS, parse_status
from chaos.cluster.node_kit.transport import Proc
from chaos.cluster.node_kit.undo import UndoOp
from chaos.cluster.ssh.conn import Connection
from chaos.cluster.ssh.install import RUNS

# the undo ops of faults.json entries this backend's reaper carries out: not ``thaw`` (no freeze
# over SSH) nor ``clock-reset`` (no clock fault without a shared live folder)
HANDLED_OPS = reap.OPS - {UndoOp.THAW, UndoOp.CLOCK_RESET}


def run_dir(run_id: str) -> str:
    return f"{RUNS}/{run_id}"


def privileged(user: str, sudo: bool, script: str) -> str:
    """``script`` as root: directly for root, through ``sudo -n`` (never a password prompt)."""
    if user == "root" or not sudo:
        return script
    return f"sudo -n sh -c {shlex.quote(script)}"


class SSHTransport:
    """One machine of a run, over its kept-open connection (the SSH backend's
    :class:`~chaos.cluster.node_kit.transport.Transport`).

    The run's processes are those its pid files name (each leads its own session, so a signal goes
    to its group too: the children it started). The first failure to reach the node marks it gone:
    every later call answers "nothing" at once instead of waiting for another connection timeout.
    """

    def __init__(self, conn: Connection, run_id: str) -> None:
        self._conn = conn
        self._dir = run_dir(run_id)
        self.node = conn.node.name
        self.gone: str | None = None  # why the node could not be reached

    def _run(self, script: str, timeout: float) -> ExecResult:
        if self.gone is not None:
            return ExecResult(255, self.gone)
        try:
            return self._conn.run(script, timeout=timeout)
        except Exception as e:  # ClusterError, or paramiko's own on a connection that broke
            self.gone = str(e) or type(e).__name__
            return ExecResult(255, self.gone)

    def exec(self, argv: Sequence[str], *, timeout: float) -> ExecResult:
        spec = self._conn.node
        return self._run(privileged(spec.user, spec.sudo, shlex.join(argv)), timeout)

    def processes(self) -> list[Proc]:
        r = self._run(STATUS.format(pids=f"{self._dir}/pids"), 20)
        seen = parse_status(r.output) if r.ok else {}
        return [
            Proc(pid=s.pid, state=s.state, name=name, token=f"{self.node}:{s.pid}")
            for name, s in sorted(seen.items())
            if s.alive
        ]

    def signal(self, pid: int, sig: int) -> bool:
        # the group first (its children); the answer is the process's own
        return self._run(
            f"kill -{int(sig)} -{int(pid)} 2>/dev/null; kill -{int(sig)} {int(pid)}", 10
        ).ok


def remove_run(conn: Connection, run_id: str) -> list[str]:
    """Everything run ``run_id`` left on this node, healed and removed; one line per action.

    Healed first by the shared reaper (stopped processes resumed: a frozen-in-place process should
    not linger as a stopped zombie; the run's chain flushed), then the run's processes get SIGKILL,
    its chain is unhooked and deleted (never any other rule), and its folder goes. Raises
    :class:`ClusterError` when the node cannot be reached."""
    node = conn.node
    rd = run_dir(run_id)
    t = SSHTransport(conn, run_id)
    # no live folder: the run's owner.json names it, but the code under test can rewrite that
    # file, and the reaper takes no local path from a node (chains and processes are the node's)
    done = reap.heal(run_id, [t], live=None)
    if t.gone is not None:
        raise ClusterError(t.gone)
    for p in t.processes():
        # each process leads its own session (setsid): the group takes its children along
        conn.run(f"kill -KILL -{p.pid} {p.pid}", timeout=10)
        done.append(f"removed process {p.name} (pid {p.pid}) on {node.name}")
    chain = chain_name(run_id)
    ipt = "iptables -w 5"
    script = (
        f"if {ipt} -S {chain} >/dev/null 2>&1; then "
        f"{ipt} -F {chain}; while {ipt} -D INPUT -j {chain} 2>/dev/null; do :; done; "
        f"{ipt} -X {chain} && echo deleted; fi"
    )
    r = conn.run(privileged(node.user, node.sudo, script), timeout=30)
    if "deleted" in r.output:
        done.append(f"removed chain {chain} on {node.name}")
    elif not r.ok:
        done.append(f"could not remove chain {chain} on {node.name}: {r.output.strip()}")
    if conn.run(f"test -d {rd}", timeout=10).ok:
        r = conn.run(f"rm -rf {rd}", timeout=60)
        done.append(
            f"removed run folder {rd} on {node.name}"
            if r.ok
            else f"could not remove {rd} on {node.name}: {r.output.strip()}"
        )
    return done
