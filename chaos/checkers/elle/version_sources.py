"""The version-order pairs each assumption of :mod:`.options` gives an rw-register history.

A transaction touches a key with an *external* version at each end: the first one it saw or
wrote there (its first read, if it read the key before writing it, else its last write) and the
last one (its last write, else its first read). A read counts only in an ``ok`` transaction
(another's reads are unknown), a write in an ``ok`` or ``info`` one (an ``info`` write may have
taken effect), nothing in a ``fail`` one. When transaction ``a`` comes before ``b`` in an order
the assumption trusts, ``a``'s last version of each key they share is not after ``b``'s first:
where the two differ, ``last(a) < first(b)``.

Only the nearest such pairs are listed, as Elle does: ``a`` and ``b`` with no transaction on
the key between them in that order; the rest follow by transitivity through the transactions
between — exactly when each of those has its first and last versions in order, which
writes-follow-reads says (from read-committed up, or with ``--wfr-keys``).

Each function returns ``{key: {(x, y), ...}}`` with ``x != y``; :data:`.versions.WORDS` puts
each source's reason into words.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from chaos.checkers.elle.txns import READ, WRITE, Txn

__all__ = [
    "MAX_REALTIME_STEPS",
    "Ends",
    "Pairs",
    "ends",
    "linearizable_keys",
    "sequential_keys",
    "transaction_order",
]

Pairs = dict[Any, set[tuple[Any, Any]]]
MAX_REALTIME_STEPS = 20_000_000  # frontier visits of the linearizable-keys sweep, at most


class Ends:
    """Each transaction's first and last external version of each key it touched (by id)."""

    __slots__ = ("first", "last")

    def __init__(self, n: int) -> None:
        self.first: list[dict[Any, Any]] = [{} for _ in range(n)]
        self.last: list[dict[Any, Any]] = [{} for _ in range(n)]


def ends(txns: Sequence[Txn]) -> Ends:
    """The external versions of every transaction (see the module's words)."""
    out = Ends(len(txns))
    for t in txns:
        if t.type == "fail":
            continue
        ok = t.type == "ok"
        read: dict[Any, Any] = {}
        wrote: dict[Any, Any] = {}
        for f, k, v in t.mops:
            if f == WRITE:
                wrote[k] = v
            elif f == READ and ok and k not in wrote and k not in read:
                read[k] = v
        first, last = out.first[t.id], out.last[t.id]
        for k, v in read.items():
            first[k] = v
            last[k] = v
        for k, v in wrote.items():
            first.setdefault(k, v)
            last[k] = v
    return out


def _link(out: Pairs, k: Hashable, x: Hashable, y: Hashable) -> None:
    if x != y:
        out.setdefault(k, set()).add((x, y))


def sequential_keys(txns: Sequence[Txn], e: Ends) -> Pairs:
    """Each process's transactions in the order it ran them: an ``ok`` one's last versions
    precede the first versions of the process's later ones (an ``info`` one is invoked after
    them, so its writes, if they took effect, follow; nothing follows it)."""
    by_process: dict[Any, list[tuple[int, Txn]]] = {}
    for t in txns:
        pos = t.invoke_pos if t.invoke_pos is not None else t.complete_pos
        if t.type != "fail" and t.process is not None and pos is not None:
            by_process.setdefault(t.process, []).append((pos, t))
    out: Pairs = {}
    for run in by_process.values():
        run.sort(key=lambda pt: pt[0])
        seen: dict[Any, Any] = {}  # key -> the last version of the process's last ok txn on it
        for _, t in run:
            for k, y in e.first[t.id].items():
                if k in seen:
                    _link(out, k, seen[k], y)
            if t.type == "ok":
                seen.update(e.last[t.id])
    return out


def linearizable_keys(txns: Sequence[Txn], e: Ends) -> tuple[Pairs, int]:
    """For each key, ``a``'s last version precedes ``b``'s first when ``a`` completed (``ok``)
    before ``b`` was invoked and no transaction on the key completed between the two: the
    transitive reduction of real-time order among the key's transactions, swept as
    :meth:`~chaos.checkers.elle.graph.DepGraph.add_realtime_order` sweeps it, one frontier per
    key. Returns the pairs and how many frontier visits were left out for the bound
    :data:`MAX_REALTIME_STEPS` (fewer pairs miss anomalies, never invent one)."""
    events: list[tuple[int, int]] = []  # (history position, tid for an invocation, ~tid else)
    for t in txns:
        if t.type == "fail" or not e.first[t.id]:
            continue
        if t.invoke_pos is not None:
            events.append((t.invoke_pos, t.id))
        if t.type == "ok" and t.complete_pos is not None:
            events.append((t.complete_pos, ~t.id))
    events.sort()
    out: Pairs = {}
    frontier: dict[Any, tuple[int, ...]] = {}  # key -> completed txns no later one follows
    at_invoke: dict[tuple[int, Any], tuple[int, ...]] = {}
    budget = MAX_REALTIME_STEPS
    skipped = 0
    last = e.last
    for _, ev in events:
        if ev >= 0:
            for k, y in e.first[ev].items():
                before = frontier.get(k, ())
                if len(before) > budget:
                    skipped += len(before)
                    continue
                budget -= len(before)
                at_invoke[(ev, k)] = before
                for u in before:
                    _link(out, k, last[u][k], y)
            continue
        tid = ~ev
        for k in last[tid]:
            before = at_invoke.pop((tid, k), ())
            gone = set(before)
            frontier[k] = (*(u for u in frontier.get(k, ()) if u not in gone), tid)
    return out, skipped


def transaction_order(txns: Sequence[Txn], order: Mapping[int, int]) -> Pairs:
    """The database's commit order (completion ``:index`` -> position): each key's written
    versions (a transaction's last write of the key), ordered by their writers' positions, each
    before the next. Transactions the order does not name are left out of it."""
    by_key: dict[Any, list[tuple[int, Any]]] = {}
    for t in txns:
        at = order.get(t.index)
        if at is None or t.type == "fail":
            continue
        wrote = {k: v for f, k, v in t.mops if f == WRITE}
        for k, v in wrote.items():
            by_key.setdefault(k, []).append((at, v))
    out: Pairs = {}
    for k, vs in by_key.items():
        vs.sort(key=lambda av: av[0])
        for (_, x), (_, y) in itertools.pairwise(vs):
            _link(out, k, x, y)
    return out
