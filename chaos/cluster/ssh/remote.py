"""Shell snippets the SSH backend runs on a node, and removing a run's traces from one.

Kept apart from the cluster so that the reaper (``chaos cleanup``) removes a dead run's leftovers
with exactly the code a live run's teardown uses.
"""

from __future__ import annotations

import shlex

from chaos.cluster.net import chain_name
from chaos.cluster.node_kit.proctable import STATUS, parse_status
from chaos.cluster.node_kit.undo import UndoOp
from chaos.cluster.ssh.conn import Connection
from chaos.cluster.ssh.install import RUNS

# the undo ops of faults.json entries this backend's reaper carries out (by the run's own pid files
# and chain, which also catch what faults.json missed); ``thaw`` is absent: no freeze over SSH
HANDLED_OPS = frozenset({UndoOp.SIGCONT, UndoOp.IPTABLES_FLUSH})


def run_dir(run_id: str) -> str:
    return f"{RUNS}/{run_id}"


def privileged(user: str, sudo: bool, script: str) -> str:
    """``script`` as root: directly for root, through ``sudo -n`` (never a password prompt)."""
    if user == "root" or not sudo:
        return script
    return f"sudo -n sh -c {shlex.quote(script)}"


def remove_run(conn: Connection, run_id: str) -> list[str]:
    """Everything run ``run_id`` left on this node, healed and removed; one line per action.

    Order matters: stopped processes get SIGCONT before SIGKILL (a frozen-in-place process should
    not linger as a stopped zombie), the run's iptables chain is flushed, unhooked and deleted
    (never any other rule), then the run's folder goes."""
    node = conn.node
    rd = run_dir(run_id)
    done: list[str] = []
    st = conn.run(STATUS.format(pids=f"{rd}/pids"), timeout=20)
    seen = parse_status(st.output) if st.ok else {}
    procs = [(name, s.pid, s.state) for name, s in seen.items() if s.alive]
    for name, pid, state in procs:
        # each process leads its own session (setsid): the group takes its children along
        conn.run(f"kill -CONT -{pid} {pid}; kill -KILL -{pid} {pid}", timeout=10)
        if state == "T":
            done.append(f"healed: resumed stopped {name} (pid {pid}) on {node.name}")
        done.append(f"removed process {name} (pid {pid}) on {node.name}")
    chain = chain_name(run_id)
    ipt = "iptables -w 5"
    script = (
        f"if {ipt} -S {chain} >/dev/null 2>&1; then "
        f"echo rules $({ipt} -S {chain} | grep -c '^-A'); "
        f"{ipt} -F {chain}; while {ipt} -D INPUT -j {chain} 2>/dev/null; do :; done; "
        f"{ipt} -X {chain} && echo deleted; fi"
    )
    r = conn.run(privileged(node.user, node.sudo, script), timeout=30)
    if "deleted" in r.output:
        n = next((ln.split()[1] for ln in r.output.splitlines() if ln.startswith("rules ")), "0")
        if n != "0":
            done.append(f"healed: flushed {chain} ({n} rule(s)) on {node.name}")
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
