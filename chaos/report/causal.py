"""The happens-before order of one task's events, for its sequence diagram.

Each event is stamped by its own node's clock when its process logged it, not when its effect
happened: an api that commits its create transaction and logs it 70 ms later is stamped after
the relay that already read the outbox entry and published it. Sorting by stamps then draws a
publish before the transaction that wrote what it published. So the rows follow what is known
to have happened before what, and stamps only where nothing is known:

* one process's events, in the order it logged them;
* etcd's revisions: a ``txn`` event that names its revision, and the event reporting that write
  (``task-accepted``, ``commit``, ``marked-published``) right after it, happen in revision order,
  as do the writes of etcd's record (the proxies' journal) that name the task's keys; a journal
  write and an event of the same node are ordered by that node's one clock (the proxy's stamp is
  taken when etcd answered, before the service logs it);
* the broker's order: a message is published before it is delivered (the same stream sequence),
  and its n-th delivery comes before its (n+1)-th;
* an outbox entry is written (the task accepted) before a relay publishes it;
* a client's request before anything the api it asked did for the task, and the api's
  acceptance before the answer.

Stamps are on the run's clock (events from machines with clocks of their own were moved onto
the orchestrator's with each node's measured offset when collected: chaos.cluster.ssh). Among
the events these rules leave unordered, the earlier stamp comes first; a contradiction (a cycle)
is broken at the earliest stamp, never dropped.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from chaos.checkers.journal import Journal
from chaos.report.clientops import ClientOp
from chaos.report.loading import EventLike

__all__ = ["Write", "causal_times", "task_writes", "writes_by_name"]

# events that report the write of the ``txn`` event logged just before them in the same process
REPORTS_WRITE = frozenset({"task-accepted", "commit", "marked-published"})
# a causal time is at least this much after the one before it (rows sort by it)
TICK = 1e-6

Key = Hashable


@dataclass(frozen=True, slots=True)
class Write:
    """A write of etcd's record (a journal line) that names one of the task's keys."""

    node: str
    revision: int
    time: float | None


def writes_by_name(journal: Journal | None) -> dict[str, list[Write]]:
    """The journal's successful writes by the last part of each key they name (a task's id,
    an event id: ``/lab3/tasks/t2``, ``/lab3/outbox/<event id>``), read once per page."""
    out: dict[str, list[Write]] = defaultdict(list)
    for w in journal.writes if journal is not None else ():
        if w.revision is None or w.outcome != "ok" or w.succeeded is False:
            continue
        keys = {k.rsplit("/", 1)[-1] for k, _, _ in w.puts} | {
            k.rsplit("/", 1)[-1] for k, _ in w.deletes
        }
        for name in keys:
            out[name].append(Write(node=w.node, revision=w.revision, time=w.time))
    return dict(out)


def task_writes(by_name: Mapping[str, list[Write]], names: Iterable[str]) -> list[Write]:
    """The writes that name any of ``names``, once each, in revision order."""
    found = {(w.node, w.revision): w for n in names if n for w in by_name.get(n, ())}
    return sorted(found.values(), key=lambda w: w.revision)


class _Graph:
    def __init__(self) -> None:
        self.stamp: dict[Key, float] = {}
        self.order: dict[Key, int] = {}
        self.after: dict[Key, set[Key]] = defaultdict(set)

    def add(self, key: Key, stamp: float) -> None:
        self.stamp[key] = stamp
        self.order[key] = len(self.order)

    def edge(self, a: Key, b: Key) -> None:
        if a != b and a in self.stamp and b in self.stamp:
            self.after[a].add(b)

    def chain(self, keys: Sequence[Key]) -> None:
        for a, b in itertools.pairwise(keys):
            self.edge(a, b)

    def linear(self) -> list[Key]:
        """A topological order, the earliest stamp first among the ready; a cycle is broken at
        the earliest stamp left."""
        need = {k: 0 for k in self.stamp}
        for a in self.after:
            for b in self.after[a]:
                need[b] += 1
        prio = {k: (self.stamp[k], self.order[k]) for k in self.stamp}
        ready = [(prio[k], k) for k, n in need.items() if n == 0]
        heapq.heapify(ready)
        done: list[Key] = []
        left = set(self.stamp)
        while left:
            if not ready:  # a cycle: the clocks and the rules disagree; the stamp decides
                k = min(left, key=prio.__getitem__)
                need[k] = 0
                ready.append((prio[k], k))
            _, k = heapq.heappop(ready)
            if k not in left:
                continue
            left.discard(k)
            done.append(k)
            for b in self.after.get(k, ()):
                need[b] -= 1
                if need[b] == 0 and b in left:
                    heapq.heappush(ready, (prio[b], b))
        return done


def _revisions(events: Sequence[EventLike]) -> dict[int, int]:
    """Event index -> the etcd revision it is at: a ``txn`` that names one, and the event that
    reports that write right after it in the same process."""
    out: dict[int, int] = {}
    last: dict[tuple[str, str, object], int] = {}
    for i, ev in sorted(enumerate(events), key=lambda p: (p[1].time, p[0])):
        proc = (ev.node, ev.component, ev.pid)
        rev = ev.data.get("rev") if ev.kind == "txn" else None
        if isinstance(rev, int) and not isinstance(rev, bool) and ev.data.get("ok") is not False:
            out[i] = last[proc] = rev
        elif ev.kind in REPORTS_WRITE and proc in last:
            out[i] = last.pop(proc)
        elif ev.kind != "txn":
            last.pop(proc, None)
    return out


def _process_order(g: _Graph, events: Sequence[EventLike]) -> None:
    procs: dict[tuple[str, str, object], list[int]] = defaultdict(list)
    for i, ev in enumerate(events):
        procs[(ev.node, ev.component, ev.pid)].append(i)
    for idx in procs.values():
        logged: list[int] = sorted(idx, key=lambda i: (events[i].time, i))
        g.chain(logged)


def _etcd_order(
    g: _Graph, events: Sequence[EventLike], revs: Mapping[int, int], writes: Sequence[Write]
) -> None:
    """Revision order over the events at a revision and the journal's writes; a journal write
    and an event of its node that is at no revision, by that node's clock."""
    groups: dict[int, list[Key]] = defaultdict(list)
    for j, w in enumerate(writes):
        groups[w.revision].append(("w", j))
    for i, r in revs.items():
        groups[r].append(i)
    _between_groups(g, [groups[r] for r in sorted(groups)])
    for keys in groups.values():
        for k in keys:
            if isinstance(k, tuple):
                for other in keys:
                    if not isinstance(other, tuple):
                        g.edge(k, other)  # etcd answered before the service logged it
    for j, w in enumerate(writes):
        if w.time is None:
            continue
        for i, ev in enumerate(events):
            if ev.node == w.node and i not in revs:
                g.edge(("w", j), i) if w.time <= ev.time else g.edge(i, ("w", j))


def _broker_order(g: _Graph, events: Sequence[EventLike]) -> None:
    """Published before delivered (the same stream sequence when both name it), and the n-th
    delivery before the (n+1)-th; an accepted event before its relay's publish of it."""
    publishes = [i for i, ev in enumerate(events) if ev.kind == "publish"]
    deliveries = [i for i, ev in enumerate(events) if ev.kind == "delivery"]
    accepted = [
        i
        for i, ev in enumerate(events)
        if ev.kind == "task-accepted" and ev.data.get("new") is not False
    ]
    for p in publishes:
        if events[p].component == "relay":
            for a in accepted:
                if None in (events[a].event_id, events[p].event_id) or (
                    events[a].event_id == events[p].event_id
                ):
                    g.edge(a, p)  # the entry it publishes was written by that acceptance
        seq = events[p].data.get("stream_seq")
        for d in deliveries:
            dseq = events[d].data.get("stream_seq")
            if (seq is None or dseq is None or seq == dseq) and _num(events[d]) <= 1:
                g.edge(p, d)
    by_num: dict[int, list[Key]] = defaultdict(list)
    for d in deliveries:
        by_num[_num(events[d])].append(d)
    _between_groups(g, [by_num[n] for n in sorted(by_num)])


def _between_groups(g: _Graph, groups: Sequence[Sequence[Key]]) -> None:
    """Everything of each group before everything of the next."""
    for a, b in itertools.pairwise(groups):
        for x in a:
            for y in b:
                g.edge(x, y)


def _num(ev: EventLike) -> int:
    n = ev.data.get("num_delivered")
    return n if isinstance(n, int) and not isinstance(n, bool) else 1


def _client_order(g: _Graph, events: Sequence[EventLike], ops: Sequence[ClientOp]) -> None:
    """A request before what the api it asked did for the task; the api's acceptance on the
    answering node before the answer."""
    for k, op in enumerate(ops):
        start, end = ("op", k, "start"), ("op", k, "end")
        g.edge(start, end)
        asked = {str(a.get("node", "")) for a in op.retried} | {op.node or ""}
        for i, ev in enumerate(events):
            if ev.component != "api" or ev.node not in asked:
                continue
            g.edge(start, i)
            if ev.node == op.node and ev.kind in ("txn", "task-accepted"):
                g.edge(i, end)


def causal_times(
    events: Sequence[EventLike], ops: Sequence[ClientOp], writes: Sequence[Write] = ()
) -> dict[Key, float]:
    """A time for each event (by its index in ``events``) and each op's start and end (``("op",
    k, "start" | "end")``) that grows along the happens-before order: its own stamp, or just after
    the event before it when that one is stamped later."""
    g = _Graph()
    timed = [w for w in writes if w.time is not None]
    revs = _revisions(events)
    # an event at a revision happened when etcd answered it, which its node's proxy stamped
    answered = {(w.node, w.revision): w.time for w in timed}
    for i, ev in enumerate(events):
        at = answered.get((ev.node, revs[i])) if i in revs else None
        g.add(i, min(ev.time, at) if at is not None else ev.time)
    for k, op in enumerate(ops):
        g.add(("op", k, "start"), op.start)
        if op.completed:
            g.add(("op", k, "end"), op.end)
    for j, w in enumerate(timed):
        g.add(("w", j), w.time)  # type: ignore[arg-type]
    _process_order(g, events)
    _etcd_order(g, events, revs, timed)
    _broker_order(g, events)
    _client_order(g, events, ops)
    out: dict[Key, float] = {}
    prev = float("-inf")
    for key in g.linear():
        prev = max(g.stamp[key], prev + TICK)
        if not (isinstance(key, tuple) and key[0] == "w"):
            out[key] = prev
    return out
