"""The ledger of active faults: every fault is written down before it is applied, so it can be healed.

Each start and heal becomes a Jepsen-shaped pair of nemesis ops (``info`` invoke, ``info``
completion) carrying ``fault``, ``phase`` and ``fault_id``; the start ops also carry what the
ledger's ``kinds`` say of the fault (its row in the fault table: ``verb``, ``colour``), so that the
checkers and the report, which sit below the table, read it from the record. The ledger is mirrored to
``<run>/faults.json`` (durably, beside the run: never in the live folder the nodes can write) so that ``chaos cleanup`` can heal what a killed orchestrator left behind:
each entry's ``reap`` list says how to undo it from outside the run (``sigcont`` a host pid,
``iptables-flush`` a chain in some containers, ``thaw`` a container).

Heal never races apply: a heal waits until the fault's apply has returned, so a fault applied by a
nemesis thread while the run is being interrupted is still undone. After ``close`` no fault may
start, so nothing is applied after the final heal.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.histories.files import write_atomic
from chaos.histories.jsonl import HistoryRecorder
from chaos.histories.ops import NEMESIS, OpType

# how long a heal waits for a concurrent apply to return before undoing anyway
APPLY_WAIT = 60.0


class LedgerClosed(RuntimeError):
    """The run is healing for the last time: no new fault may start."""


@dataclass(slots=True, kw_only=True)
class ActiveFault:
    fault_id: int
    fault: str
    targets: list[dict[str, Any]]
    undo: Callable[[], object]  # what it healed: recorded, never read
    extra: dict[str, Any] = field(default_factory=dict)
    applied: threading.Event = field(default_factory=threading.Event)


class FaultLedger:
    def __init__(
        self,
        history: HistoryRecorder,
        mirror: Path | None = None,
        *,
        kinds: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._history = history
        self._mirror = mirror
        # fault name -> the fields its start ops carry (chaos.nemesis.table.recorded)
        self._kinds = dict(kinds or {})
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._closed = False
        self.active: dict[int, ActiveFault] = {}
        self.applied: list[dict[str, Any]] = []

    def _save(self) -> None:
        if self._mirror is None:
            return
        data = [
            {"fault_id": f.fault_id, "fault": f.fault, "targets": f.targets, **f.extra}
            for f in self.active.values()
        ]
        write_atomic(self._mirror, json.dumps(data, default=str).encode())

    def start(
        self,
        fault: str,
        apply: Callable[[], list[dict[str, Any]]],
        undo: Callable[[], object],
        *,
        intent: object = None,
        trigger: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> int:
        """Record the invoke, apply the fault, record what it resolved to. Returns the fault id.

        ``apply`` returns the resolved targets; ``undo`` must be idempotent (heal may run twice:
        once by schedule and once by the final heal-all).
        """
        with self._lock:
            if self._closed:
                raise LedgerClosed(f"{fault}: the run is ending, no fault may start now")
            fid = next(self._ids)
            meta: dict[str, Any] = {"fault": fault, "phase": "start", "fault_id": fid}
            meta.update(self._kinds.get(fault, {}))
            if trigger:
                meta["trigger"] = trigger
            self._history.record(
                process=NEMESIS, type=OpType.INFO, f=fault, value=intent, extra=meta
            )
            placeholder = ActiveFault(
                fault_id=fid, fault=fault, targets=[], undo=undo, extra=dict(extra or {})
            )
            self.active[fid] = placeholder
            self._save()
        try:
            targets = apply()
        except BaseException as e:
            placeholder.applied.set()
            with self._lock:
                self._history.record(
                    process=NEMESIS,
                    type=OpType.INFO,
                    f=fault,
                    value=intent,
                    error=f"{type(e).__name__}: {e}",
                    extra=meta,
                )
            raise
        self._applied(placeholder, targets, intent=intent, trigger=trigger, meta=meta)
        return fid

    def _applied(
        self,
        active: ActiveFault,
        targets: list[dict[str, Any]],
        *,
        intent: object,
        trigger: dict[str, Any] | None,
        meta: dict[str, Any],
    ) -> None:
        """Record what a fault that took effect resolved to, in the ledger and the history."""
        with self._lock:
            active.targets = targets
            active.applied.set()
            self._save()
            value: object = targets[0] if len(targets) == 1 else {"targets": targets}
            op = self._history.record(
                process=NEMESIS, type=OpType.INFO, f=active.fault, value=value, extra=meta
            )
            self.applied.append(
                {
                    "fault_id": active.fault_id,
                    "fault": active.fault,
                    "intent": intent,
                    "targets": targets,
                    "trigger": trigger,
                    "started": round(op.time, 3),
                }
            )

    def heal(self, fid: int, value: object = None) -> None:
        with self._lock:
            pending = self.active.get(fid)
        if pending is None:
            return
        # an apply still running in another thread finishes first, so its effect is undone too
        pending.applied.wait(APPLY_WAIT)
        with self._lock:
            f = self.active.pop(fid, None)
            if f is None:
                return
            meta = {"fault": f.fault, "phase": "heal", "fault_id": fid}
            self._history.record(
                process=NEMESIS, type=OpType.INFO, f=f"heal-{f.fault}", value=f.targets, extra=meta
            )
            try:
                result = f.undo()
                # shaped like the start's completion: one target is the object itself
                if isinstance(result, list) and len(result) == 1:
                    result = result[0]
                elif isinstance(result, list) and result:
                    result = {"targets": result}
                error = None
            except Exception as e:  # keep healing the rest; the error is in the history
                result, error = None, f"{type(e).__name__}: {e}"
            self._history.record(
                process=NEMESIS,
                type=OpType.INFO,
                f=f"heal-{f.fault}",
                value=value if value is not None else result or f.targets,
                error=error,
                extra=meta,
            )
            self._save()

    def heal_all(self) -> int:
        with self._lock:
            ids = sorted(self.active)
        for fid in ids:
            self.heal(fid)
        return len(ids)

    def close(self) -> None:
        """Refuse new faults from now on (the final heal is about to run)."""
        with self._lock:
            self._closed = True

    def shutdown(self) -> int:
        """``close`` then ``heal_all``: what the end of a run and an interrupt both do."""
        self.close()
        return self.heal_all()

    @property
    def closed(self) -> bool:
        return self._closed
