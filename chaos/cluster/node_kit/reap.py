"""The one reaper: undo a dead run's faults on its nodes that still exist, whatever the backend.

A run killed with SIGKILL cannot heal itself. Its backend finds what the run left (Docker: its
containers by label; SSH: its folder on each machine), hands this reaper one
:class:`~chaos.cluster.node_kit.transport.Transport` per node, then removes the nodes' traces its
own way. Healing in place, before removal, matters for whoever looks at a crashed run's nodes and
for a backend whose nodes outlive the run (SSH machines). One step per undo op a fault's row names
(``undo`` in chaos.nemesis.table; :data:`STEPS`), in order:

1. ``thaw``: thaw frozen nodes (a frozen node's processes cannot act on anything else done here);
2. ``iptables-flush``: flush the run's iptables chains on every node: the run's own chain and any
   chain the ledger names (partitions and lossy links), never another rule;
3. ``clock-reset``: put every clock file of the run back to the true time (the clock folder is the
   orchestrator's, in the run's live folder);
4. ``sigcont``: resume every stopped process of the run on every node.

Steps 2 and 4 act on what the nodes show, not only on what the ledger (``faults.json``) lists:
the orchestrator may have died between a signal and its record. The ledger names the chains
beyond the run's own and the processes in the report. Nothing here raises for a node that is
gone: a step that fails is a line of the report, and the other nodes and steps still run.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from chaos.cluster import clocks
from chaos.cluster.net import chain_name
from chaos.cluster.node_kit import undo
from chaos.cluster.node_kit.transport import Thawing, Transport
from chaos.cluster.node_kit.undo import UndoOp

# what chain_name makes (at most 28 characters); a ledger entry naming anything else is ignored
_CHAIN = re.compile(r"CHAOS-[A-Za-z0-9_.-]{1,22}")


@dataclass(frozen=True, slots=True)
class DeadRun:
    """What the steps work from: the run, its nodes, its ledger and its live folder."""

    run_id: str
    nodes: Sequence[Transport]
    ledger: list[dict[str, Any]]
    live: Path | None


def _thaw_all(run: DeadRun) -> list[str]:
    return [ln for t in run.nodes for ln in _guarded("thaw", t.node, partial(_thaw, t))]


def _flush_all(run: DeadRun) -> list[str]:
    chains = run_chains(run.run_id, run.ledger)
    flush = "flush the run's chains on"
    return [ln for t in run.nodes for ln in _guarded(flush, t.node, partial(_flush, t, chains))]


def _reset_all(run: DeadRun) -> list[str]:
    if run.live is None:
        return []
    return _guarded("reset the clocks of", "the run", partial(_reset_clocks, run.live))


def _resume_all(run: DeadRun) -> list[str]:
    names = {
        str(r["token"]): str(r["process"])
        for r in undo.entries(run.ledger, UndoOp.SIGCONT)
        if r.get("token") and r.get("process")
    }
    resume = "resume the processes on"
    return [ln for t in run.nodes for ln in _guarded(resume, t.node, partial(_resume, t, names))]


# the reap step of each undo op, in the order they run (the module's docstring says why)
STEPS: tuple[tuple[UndoOp, Callable[[DeadRun], list[str]]], ...] = (
    (UndoOp.THAW, _thaw_all),
    (UndoOp.IPTABLES_FLUSH, _flush_all),
    (UndoOp.CLOCK_RESET, _reset_all),
    (UndoOp.SIGCONT, _resume_all),
)
# every undo op this reaper carries out; a backend handles those its transport allows (THAW needs
# a Thawing transport, CLOCK_RESET the run's live folder on this machine)
OPS = frozenset(op for op, _ in STEPS)


def heal(run_id: str, nodes: Sequence[Transport], *, live: str | None) -> list[str]:
    """Undo run ``run_id``'s faults on ``nodes``: every step of :data:`STEPS`; one line per thing
    done (or not done).

    ``live`` is the run's live folder on this machine (its ledger sits beside it, its clock files
    inside), or None when the backend does not know it."""
    run = DeadRun(run_id, nodes, undo.recorded(live), Path(live) if live else None)
    return [ln for _, step in STEPS for ln in step(run)]


def run_chains(run_id: str, ledger: Iterable[dict[str, Any]]) -> set[str]:
    """The run's own chain, and every chain of the run the ledger names."""
    recorded = (str(r.get("chain", "")) for r in undo.entries(list(ledger), UndoOp.IPTABLES_FLUSH))
    return {chain_name(run_id)} | {c for c in recorded if _CHAIN.fullmatch(c)}


def _guarded(what: str, where: str, step: Callable[[], list[str]]) -> list[str]:
    # a transport must not raise; one that does costs its own step, never the others'
    try:
        return step()
    except Exception as e:
        return [f"could not {what} {where} ({type(e).__name__}: {e})"]


def _thaw(t: Transport) -> list[str]:
    return [f"healed: thawed {t.node}"] if isinstance(t, Thawing) and t.thaw() else []


def _flush(t: Transport, chains: set[str]) -> list[str]:
    out = []
    for chain in sorted(chains):
        listed = t.exec(["iptables", "-w", "5", "-S", chain], timeout=30)
        if not listed.ok:
            continue  # no such chain there (or no node): nothing was cut on this node
        rules = [ln for ln in listed.output.splitlines() if ln.startswith("-A")]
        flushed = t.exec(["iptables", "-w", "5", "-F", chain], timeout=30)
        if not flushed.ok:
            out.append(f"could not flush {chain} on {t.node}: {flushed.output.strip()}")
        elif rules:
            out.append(f"healed: flushed {chain} ({len(rules)} rule(s)) on {t.node}")
    return out


def _reset_clocks(live: Path) -> list[str]:
    return [f"healed: reset the clock of {name}" for name in clocks.reset_all(live)]


def _resume(t: Transport, names: dict[str, str]) -> list[str]:
    out = []
    for p in t.processes():
        if p.state == "T" and t.signal(p.pid, signal.SIGCONT):
            name = p.name or names.get(p.token or "") or "process"
            out.append(f"healed: resumed stopped {name} (pid {p.pid}) on {t.node}")
    return out
