"""The undo ops a reaper carries out for a run whose orchestrator died, and reading them from the
dead run's ledger.

A fault that must be healed after a crash names one of these ops in its ``faults.json`` entries
(``undo=`` in its row of ``chaos.nemesis.table``): ``{"op": "sigcont", "token": ...}`` and the
like; the one reaper has one step per op (``STEPS`` in chaos.cluster.node_kit.reap). Each backend's
reaper says which ops it handles (``HANDLED_OPS``, a set of :class:`UndoOp`); a unit test fails
when the fault table names one that no reaper of a backend able to do the fault handles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from chaos.histories.files import read_regular


class UndoOp(StrEnum):
    SIGCONT = "sigcont"  # resume a SIGSTOPped process (entry: token, node, process)
    THAW = "thaw"  # unfreeze a node's cgroup (entry: node, container)
    IPTABLES_FLUSH = "iptables-flush"  # flush the run's chain on every node (entry: chain)
    CLOCK_RESET = "clock-reset"  # put clock files back to the true time (entry: files)


def recorded(live: str | None) -> list[dict[str, Any]]:
    """The dead run's ledger: ``<run>/faults.json`` beside its live folder (runs before 0.2 kept
    it inside the live folder); empty when there is none or it is not a list."""
    if not live:
        return []
    data: Any = None
    for path in (Path(live).parent / "faults.json", Path(live) / "faults.json"):
        try:
            data = json.loads(read_regular(path, 16 << 20))
            break
        except (OSError, ValueError):
            continue
    return [f for f in data if isinstance(f, dict)] if isinstance(data, list) else []


def entries(faults: list[dict[str, Any]], op: UndoOp) -> Iterator[dict[str, Any]]:
    """Every undo entry of ``op`` the ledger's faults carry."""
    for f in faults:
        for r in f.get("reap", []):
            if isinstance(r, dict) and r.get("op") == op:
                yield r
