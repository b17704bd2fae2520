"""Everything known about one lab3 task: its events, its client ops, the faults around it.

Events are joined to a task by ``task_id`` and, because a delivery may carry only the stable
``event_id``, by the event ids the task's other events and its create op name.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.checkers.journal import read_journal
from chaos.report.causal import Write, task_writes, writes_by_name
from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand
from chaos.report.loading import EventLike

# The chain the lab asks students to excerpt; a task showing more of it is a better example.
CHAIN_KINDS = ("publish", "delivery", "commit", "suppressed", "ack")
EVENTFUL = frozenset({"suppressed", "publish-retry", "publish-ack-lost", "crash", "fault-point"})
PLAIN_CANDIDATES = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskView:
    task_id: str
    events: list[EventLike]  # the task's own events plus crashes of the processes it touched
    ops: list[ClientOp]
    bands: list[FaultBand]
    # the writes of etcd's record (the proxies' journal) to the task's keys: its causal order
    writes: tuple[Write, ...] = ()

    @property
    def start(self) -> float:
        times = [e.time for e in self.events] + [o.start for o in self.ops]
        return min(times) if times else 0.0

    @property
    def end(self) -> float:
        times = [e.time for e in self.events] + [o.end for o in self.ops if o.completed]
        return max(times) if times else 0.0


class TaskIndex:
    def __init__(
        self,
        events: Sequence[EventLike],
        ops: list[ClientOp],
        bands: list[FaultBand],
        *,
        final: Mapping[str, Any] | None = None,
    ) -> None:
        """``final``: the run's final state, whose journal (etcd's writes, by node) orders
        each task's events (chaos.report.causal)."""
        self._bands = bands
        self._writes = writes_by_name(read_journal(final))
        eid_task: dict[str, str] = {}
        self.ops_by_task: dict[str, list[ClientOp]] = defaultdict(list)
        for op in ops:
            tid = _op_task(op)
            if tid is None:
                continue
            self.ops_by_task[tid].append(op)
            if isinstance(op.result, dict) and op.result.get("event_id"):
                eid_task[str(op.result["event_id"])] = tid
        for ev in events:
            if ev.task_id and ev.event_id:
                eid_task.setdefault(ev.event_id, ev.task_id)
        self.events_by_task: dict[str, list[EventLike]] = defaultdict(list)
        self._crashes: list[EventLike] = []
        # Tasks that went beyond the plain path: the only candidates for the excerpt, so that
        # choosing it does not score every task of a 100k-op run.
        self._eventful: dict[str, None] = {}
        for ev in events:
            tid = ev.task_id or (eid_task.get(ev.event_id) if ev.event_id else None)
            if tid:
                self.events_by_task[tid].append(ev)
                if ev.kind in EVENTFUL or (
                    ev.kind in ("delivery", "publish")
                    and _int(ev.data.get("num_delivered", ev.data.get("attempt"))) > 1
                ):
                    self._eventful[tid] = None
            elif ev.kind in ("crash", "fault-point"):
                self._crashes.append(ev)

    def view(self, task_id: str) -> TaskView | None:
        evs = list(self.events_by_task.get(task_id, []))
        ops = list(self.ops_by_task.get(task_id, []))
        if not evs and not ops:
            return None
        times = [e.time for e in evs] + [o.start for o in ops] + [o.end for o in ops]
        t0, t1 = min(times), max(times)
        touched = {(e.component, e.node) for e in evs}
        for c in self._crashes:
            # A crash of a process the task went through, while the task was in flight, is part
            # of its story (the relay died before publishing, the worker before its ACK).
            if (c.component, c.node) in touched and t0 <= c.time <= t1:
                evs.append(c)
        evs.sort(key=lambda e: e.time)
        bands = [b for b in self._bands if b.overlaps(t0, t1)]
        names = {task_id} | {e.event_id for e in evs if e.event_id}
        writes = tuple(task_writes(self._writes, names))
        return TaskView(task_id=task_id, events=evs, ops=ops, bands=bands, writes=writes)

    def eventful(self) -> list[str]:
        """Tasks that went beyond the plain path (a redelivery, a suppression, a crash, ...)."""
        return list(self._eventful)

    def chain_score(self, task_id: str) -> tuple[int, int]:
        evs = self.events_by_task.get(task_id, [])
        kinds = {e.kind for e in evs}
        score = sum(k in kinds for k in CHAIN_KINDS)
        score += any(e.kind == "delivery" and _int(e.data.get("num_delivered")) > 1 for e in evs)
        score += any(e.kind == "publish" and _int(e.data.get("attempt")) > 1 for e in evs)
        commits = sum(e.kind == "commit" for e in evs)
        return score, -abs(commits - 1)

    def best_excerpt(self) -> str | None:
        """The task whose events show most of publish → delivery → commit → redelivery → ACK."""
        best: tuple[tuple[int, int], str] | None = None
        plain = list(itertools.islice(self.events_by_task, PLAIN_CANDIDATES))
        for tid in [*self._eventful, *plain]:
            s = self.chain_score(tid)
            if best is None or s > best[0]:
                best = (s, tid)
        return best[1] if best else None

    def normal(self, exclude: Iterable[str]) -> str | None:
        """A task that went the plain way (one publish, one delivery, one commit, an ACK)."""
        skip = set(exclude)
        fallback = None
        for tid, evs in self.events_by_task.items():
            if tid in skip:
                continue
            kinds = [e.kind for e in evs]
            if kinds.count("commit") == 1 and {"publish", "delivery", "ack"} <= set(kinds):
                if kinds.count("delivery") == 1 and kinds.count("publish") == 1:
                    return tid
                fallback = fallback or tid
        return fallback


def _op_task(op: ClientOp) -> str | None:
    for v in (op.value, op.result):
        if isinstance(v, dict) and v.get("task_id") is not None:
            return str(v["task_id"])
    return None


def _int(x: object) -> int:
    try:
        return int(x)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0
