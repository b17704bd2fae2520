"""Dependencies of a list-append history (Elle's traceable versions).

Every appended element is unique, so a read of a list names the writer of each element it holds
and, in their order, the version order of its key: each read is a prefix of the key's history.
From the longest read of each key (the version order) and the reads:

- ``ww``: the writer of element i precedes the writer of element i+1;
- ``wr``: the writer of a read's last element precedes the reader;
- ``rw``: a reader precedes the writer of the first element its read lacks.

Found without a cycle: duplicate elements in a read, reads that are not prefixes of one another
(incompatible order), elements appended by a failed transaction (G1a) or by nobody (garbage),
reads ending in a transaction's non-final append to the key (G1b), a read that disagrees with its
own transaction's earlier reads and appends (internal), and two transactions that read the same
version of a key and both appended to it (lost update).

Only the first read of a key in a transaction, before it appends to the key (an *external*
read), gives ``wr`` and ``rw`` edges; later reads feed the version order and the internal check.
Reads of ``info`` transactions are unknown and ignored; their appends count only where some read
holds them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.checkers.elle.graph import RW, WR, WW, DepGraph
from chaos.checkers.elle.inference import Findings, Inference, order_text, show, unwritten_read
from chaos.checkers.elle.txns import APPEND, READ, Txn, TxnInputError

__all__ = ["infer"]

_NOTHING = object()


class _Explainer:
    def __init__(
        self,
        writer: dict[tuple[Any, Any], int],
        orders: dict[Any, tuple[Any, ...]],
        seen: dict[Any, set[Any]],
    ) -> None:
        self.writer = writer
        self.orders = orders
        self.seen = seen  # key -> every element some read shows
        self._pos: dict[Any, dict[Any, int]] = {}

    def _unread(self, t: Txn, k: Hashable) -> object:  # an element, or _NOTHING
        """An element ``t`` (committed) appended to ``k`` that no read shows, if any."""
        seen = self.seen.get(k, set())
        for f, k2, y in t.mops:
            if f == APPEND and k2 == k and y not in seen:
                return y
        return _NOTHING

    def _position(self, k: Hashable) -> dict[Any, int]:
        p = self._pos.get(k)
        if p is None:
            p = self._pos[k] = {e: i for i, e in enumerate(self.orders.get(k, ()))}
        return p

    def explain(self, u: Txn, v: Txn, kind: int, a: str, b: str) -> dict[str, Any]:
        fixed = order_text(u, v, kind, a, b)
        if fixed is not None:
            return fixed
        w = self.writer
        if kind == WW:
            for f, k, x in u.mops:
                if f != APPEND:
                    continue
                vo = self.orders.get(k, ())
                i = self._position(k).get(x)
                if i is not None and i + 1 < len(vo) and w.get((k, vo[i + 1])) == v.id:
                    y = vo[i + 1]
                    return {
                        "key": k,
                        "value": y,
                        "text": f"{b} appended {show(y)} to key {show(k)} right after {a}'s "
                        f"append of {show(x)} (ww)",
                    }
                if i is not None and i + 1 == len(vo):
                    y = self._unread(v, k)
                    if y is not _NOTHING:
                        return {
                            "key": k,
                            "value": y,
                            "text": f"{b}'s append of {show(y)} to key {show(k)}, which no read "
                            f"shows, came after {a}'s append of {show(x)}, the last one read (ww)",
                        }
        elif kind == WR:
            for k, r in _external_reads(v):
                if r and w.get((k, r[-1])) == u.id:
                    return {
                        "key": k,
                        "value": r[-1],
                        "text": f"{b} read {a}'s append of {show(r[-1])} to key {show(k)} "
                        f"(read {show(r)}) (wr)",
                    }
        elif kind == RW:
            for k, r in _external_reads(u):
                vo = self.orders.get(k, ())
                if len(r) < len(vo) and w.get((k, vo[len(r)])) == v.id:
                    y = vo[len(r)]
                    return {
                        "key": k,
                        "value": y,
                        "text": f"{a}'s read of key {show(k)} ({show(r)}) missed {b}'s append "
                        f"of {show(y)} (rw)",
                    }
                if r == vo and (y := self._unread(v, k)) is not _NOTHING:
                    return {
                        "key": k,
                        "value": y,
                        "text": f"{a}'s read of key {show(k)} ({show(r)}) missed {b}'s append "
                        f"of {show(y)}, which no read shows (rw)",
                    }
        return {"text": f"{a} < {b}"}  # not reached for an edge infer() added


def _external_reads(t: Txn) -> list[tuple[Any, tuple[Any, ...]]]:
    if t.type != "ok":
        return []
    touched: set[Any] = set()
    out = []
    for f, k, v in t.mops:
        if f == READ and k not in touched:
            out.append((k, v if v is not None else ()))
        touched.add(k)
    return out


@dataclass(slots=True)
class _Scan:
    """What one pass over the transactions leaves for the steps after it."""

    writer: dict[tuple[Any, Any], int] = field(default_factory=dict)  # (key, element) -> txn
    dup_appends: set[tuple[Any, Any]] = field(default_factory=set)
    failed: dict[tuple[Any, Any], int] = field(default_factory=dict)  # appended by a failed txn
    intermediate: set[tuple[Any, Any]] = field(default_factory=set)  # a txn appended after it
    reads_of: dict[Any, dict[tuple[Any, ...], int]] = field(default_factory=dict)  # a reader each
    external: list[tuple[int, Any, tuple[Any, ...]]] = field(default_factory=list)
    lost: dict[tuple[Any, tuple[Any, ...]], list[int]] = field(default_factory=dict)


@dataclass(slots=True)
class _Versions:
    """Each key's version order (its longest read), the reads that are prefixes of it, and every
    element some read shows."""

    orders: dict[Any, tuple[Any, ...]] = field(default_factory=dict)
    compatible: dict[Any, set[tuple[Any, ...]]] = field(default_factory=dict)
    shown: dict[Any, set[Any]] = field(default_factory=dict)


def infer(txns: Sequence[Txn]) -> Inference:
    """Infer the dependency graph and the non-cycle anomalies of a list-append history.

    The steps run in this order because each needs the one before: the writers and reads of
    the whole history, then the version orders they give, then the edges from reads against
    those orders. (The order also fixes the order of the anomalies found.)"""
    found = Findings()
    s = _scan(txns, found)
    graph = DepGraph(len(txns))
    versions = _version_orders(txns, s, graph, found)
    last_readers = _read_edges(txns, s, versions, graph, found)
    _unread_appends(txns, s, versions, last_readers, graph)
    _lost_updates(txns, s.lost, found)
    _aborted_reads(txns, s, versions, found)
    _duplicate_appends(txns, s, found)
    stats = {
        "keys": len(versions.orders),
        "appends": len(s.writer),
        "duplicate_appends": len(s.dup_appends),
    }
    explainer = _Explainer(s.writer, versions.orders, versions.shown)
    return Inference(graph=graph, explainer=explainer, anomalies=found.listed(), stats=stats)


def _scan(txns: Sequence[Txn], found: Findings) -> _Scan:
    """One pass over the transactions: who appended each element, every distinct read of each
    key, the external reads, and the anomalies one transaction shows alone (duplicates in a
    read, internal). One loop with its tables in locals: the hot part at 100k transactions."""
    s = _Scan()
    writer, dup_appends, intermediate, failed = s.writer, s.dup_appends, s.intermediate, s.failed
    reads_of, external, lost = s.reads_of, s.external, s.lost  # locals: the hot loop
    for t in txns:
        tid = t.id
        if t.type == "fail":
            _failed_appends(t, s)
            continue
        ok = t.type == "ok"
        last_append: dict[Any, Any] = {}  # a txn's last append of a key is final, not intermediate
        known: dict[Any, tuple[Any, ...]] = {}  # key -> what a read now must return
        suffix: dict[Any, list[Any]] = {}  # key -> own appends, no read yet
        ext_keys: dict[Any, tuple[Any, ...]] = {}
        for f, k, v in t.mops:
            if f == APPEND:
                wk = (k, v)
                if k in known and v in known[k] and writer.get(wk) != tid:  # not its own dup
                    found("future-read", _future(t, k, v))
                if wk in writer:
                    dup_appends.add(wk)
                else:
                    writer[wk] = tid
                if k in last_append:
                    intermediate.add((k, last_append[k]))
                last_append[k] = v
                if k in known:
                    known[k] = (*known[k], v)
                else:
                    suffix.setdefault(k, []).append(v)
            elif f == READ and ok:
                r: tuple[Any, ...] = () if v is None else v
                if not isinstance(r, tuple):
                    raise _not_a_list(t, k, r)
                seen = reads_of.get(k)
                if seen is None:
                    reads_of[k] = seen = {}
                seen.setdefault(r, tid)
                if len(set(r)) != len(r):
                    found("duplicate-elements", _duplicates(t, k, r))
                if k in known:
                    if r != known[k]:
                        found("internal", _internal(t, k, r, known[k], None))
                elif k in suffix:
                    own = tuple(suffix[k])
                    if r[len(r) - len(own) :] != own:
                        found("internal", _internal(t, k, r, None, own))
                elif k not in last_append and k not in ext_keys:
                    ext_keys[k] = r
                    external.append((tid, k, r))
                known[k] = r
        if ok:
            for k, r in ext_keys.items():
                if k in last_append:
                    lost.setdefault((k, r), []).append(tid)
    dup_appends.update(writer.keys() & failed.keys())  # also appended by a failed txn
    return s


def _failed_appends(t: Txn, s: _Scan) -> None:
    for f, k, v in t.mops:
        if f == APPEND:
            wk = (k, v)
            if wk in s.failed:  # (one an ok or info txn also appended: found after the scan)
                s.dup_appends.add(wk)
            else:
                s.failed[wk] = t.id


def _not_a_list(t: Txn, k: Hashable, r: object) -> TxnInputError:
    return TxnInputError(
        f"op {t.index}: a list-append read of key {show(k)} returned {show(r)}, not a list"
    )


def _duplicates(t: Txn, k: Hashable, r: tuple[Any, ...]) -> dict[str, Any]:
    return {
        "txn": t.index,
        "key": k,
        "read": list(r),
        "explanation": f"op {t.index} read key {show(k)} = {show(r)}: an element twice",
    }


def _version_orders(txns: Sequence[Txn], s: _Scan, graph: DepGraph, found: Findings) -> _Versions:
    """Each key's version order is its longest read; a read that is not a prefix of it is an
    incompatible order. Consecutive elements of the order give ``ww`` edges, and an element
    in the order that nobody appended is garbage; one a failed transaction appended may start a
    dirty update."""
    out = _Versions()
    writer, dup_appends = s.writer, s.dup_appends
    failed_by_key: dict[Any, set[Any]] = {}
    for k, e in s.failed:
        failed_by_key.setdefault(k, set()).add(e)
    for k, reads in s.reads_of.items():
        # ties broken by value, not by which came first: the verdict must not depend on order
        most = max(map(len, reads))
        ties = [r for r in reads if len(r) == most]
        longest = ties[0] if len(ties) == 1 else min(ties, key=repr)
        elems = set(longest)
        # a read with an element twice is duplicate-elements; its order keeps the first place
        out.orders[k] = longest if len(elems) == len(longest) else tuple(dict.fromkeys(longest))
        good = set()
        for r, reader in reads.items():
            if longest[: len(r)] == r:
                good.add(r)
                continue
            found("incompatible-order", _incompatible(txns, k, r, reader, longest, reads[longest]))
            # the version order below checks the longest read's elements; these are the only
            # others that can name an element nobody (or a failed txn) appended
            for i, e in enumerate(r):
                if (k, e) not in writer and (k, e) not in s.failed and e not in longest:
                    _garbage(found, txns, reads, k, i, e)
            elems.update(r)
        out.compatible[k] = good
        out.shown[k] = elems
        prev_w: int | None = None
        for i, e in enumerate(out.orders[k]):
            wk = (k, e)
            w = writer.get(wk)
            if w is None or wk in dup_appends:
                prev_w = None
                if w is None and wk not in s.failed:
                    _garbage(found, txns, reads, k, i, e)
                continue
            if prev_w is not None and prev_w != w:
                graph.add(prev_w, w, WW)
            prev_w = w
        if k in failed_by_key and not failed_by_key[k].isdisjoint(elems):
            _dirty_updates(txns, s, k, out.orders[k], found)
    return out


def _dirty_updates(
    txns: Sequence[Txn], s: _Scan, k: Hashable, order: tuple[Any, ...], found: Findings
) -> None:
    """A committed append right after (info ones aside) an element a failed transaction
    appended, in the key's version order: a dirty update (Elle's; it implies G1a)."""
    aborted: int | None = None  # the failed writer the run of versions since began with
    run: list[Any] = []
    for e in order:
        run.append(e)
        wk = (k, e)
        w = s.writer.get(wk)
        if w is not None and wk not in s.dup_appends:
            if txns[w].type != "ok":
                continue  # info: it may or may not have happened; the run goes on
            if aborted is not None:
                a, b = txns[aborted], txns[w]
                found(
                    "dirty-update",
                    {
                        "key": k,
                        "values": list(run),
                        "txns": [a.index, b.index],
                        "explanation": f"key {show(k)}: op {b.index} appended {show(e)} after "
                        f"op {a.index}'s append of {show(run[0])}, which failed "
                        f"(versions {show(tuple(run))}): a committed update of aborted state",
                    },
                )
            aborted, run = None, [e]
        elif wk in s.failed and aborted is None:
            aborted, run = s.failed[wk], [e]


def _aborted_reads(txns: Sequence[Txn], s: _Scan, versions: _Versions, found: Findings) -> None:
    """G1a: every read of an element only a failed transaction appended, each reader named."""
    shown = versions.shown
    keys = {k for k, e in s.failed if k in shown and e in shown[k] and (k, e) not in s.writer}
    if not keys:
        return  # no read shows one (a sound store): no pass over the reads
    for t in txns:
        if t.type != "ok":
            continue
        for f, k, v in t.mops:
            if f != READ or k not in keys or not v:
                continue
            for e in v:
                wk = (k, e)
                if wk in s.failed and wk not in s.writer:
                    unwritten_read(found, t, txns[s.failed[wk]], k, e,
                                   read=f"read {show(e)} in key {show(k)}", done=("appended", "appended"))  # fmt: skip


def _duplicate_appends(txns: Sequence[Txn], s: _Scan, found: Findings) -> None:
    """An element appended to a key twice: the reads no longer say which append they saw, so
    the key's version order is unknowable (Elle refuses such a history)."""
    if not s.dup_appends:
        return
    by: dict[tuple[Any, Any], list[int]] = {wk: [] for wk in s.dup_appends}
    for t in txns:
        for f, k, v in t.mops:
            if f == APPEND and (k, v) in by:
                by[(k, v)].append(t.index)
    for (k, v), ops in by.items():
        found(
            "duplicate-appends",
            {
                "key": k,
                "value": v,
                "txns": ops,
                "explanation": f"{show(v)} was appended to key {show(k)} more than once (ops "
                f"{', '.join(map(str, ops))}): no read can say which append it saw",
            },
        )


def _incompatible(
    txns: Sequence[Txn],
    k: Hashable,
    r: tuple[Any, ...],
    reader: int,
    longest: tuple[Any, ...],
    by: int,
) -> dict[str, Any]:
    return {
        "key": k,
        "reads": [list(r), list(longest)],
        "txns": [txns[reader].index, txns[by].index],
        "explanation": f"key {show(k)} was read as {show(r)} by op {txns[reader].index} and as "
        f"{show(longest)} by op {txns[by].index}: neither is a prefix of the other",
    }


def _read_edges(
    txns: Sequence[Txn], s: _Scan, versions: _Versions, graph: DepGraph, found: Findings
) -> dict[Any, list[int]]:
    """``wr`` from the writer of an external read's last element (G1b if that was not its
    writer's final append) and ``rw`` to the writer of the first element the read lacks.
    Returns, per key, the external readers of its whole version order (for the next step)."""
    writer, dup_appends = s.writer, s.dup_appends
    orders, compatible = versions.orders, versions.compatible
    last_readers: dict[Any, list[int]] = {}
    for tid, k, r in s.external:
        if r:
            wk = (k, r[-1])
            w = writer.get(wk)
            if w is not None and w != tid and wk not in dup_appends:
                graph.add(w, tid, WR)
                if wk in s.intermediate:
                    found("G1b", _intermediate(txns, k, r, w, tid))
        vo = orders[k]
        if len(r) < len(vo) and r in compatible[k]:
            wk = (k, vo[len(r)])
            w = writer.get(wk)
            if w is not None and w != tid and wk not in dup_appends:
                graph.add(tid, w, RW)
        elif r == vo:
            last_readers.setdefault(k, []).append(tid)
    return last_readers


def _intermediate(
    txns: Sequence[Txn], k: Hashable, r: tuple[Any, ...], w: int, tid: int
) -> dict[str, Any]:
    return {
        "txns": [txns[w].index, txns[tid].index],
        "key": k,
        "value": r[-1],
        "explanation": f"op {txns[tid].index} read key {show(k)} = {show(r)}, ending in "
        f"{show(r[-1])}, which op {txns[w].index} appended and then appended to again "
        "(intermediate read)",
    }


def _unread_appends(
    txns: Sequence[Txn],
    s: _Scan,
    versions: _Versions,
    last_readers: dict[Any, list[int]],
    graph: DepGraph,
) -> None:
    """An append no read shows, by a committed transaction, still came after every element a
    read shows (were it before one, every read showing that one would show it too): after the
    last version read, and after its readers (Elle does the same)."""
    writer, dup_appends, orders, shown = s.writer, s.dup_appends, versions.orders, versions.shown
    for t in txns:
        if t.type != "ok":
            continue
        for f, k, v in t.mops:
            if f != APPEND or k not in orders or v in shown[k] or (k, v) in dup_appends:
                continue
            vo = orders[k]
            if vo and (k, vo[-1]) not in dup_appends:
                w = writer.get((k, vo[-1]))
                if w is not None:
                    graph.add(w, t.id, WW)
            for r_tid in last_readers.get(k, ()):
                graph.add(r_tid, t.id, RW)


def _lost_updates(
    txns: Sequence[Txn], lost: dict[tuple[Any, tuple[Any, ...]], list[int]], found: Findings
) -> None:
    """Two committed transactions that read the same version of a key and both appended to it."""
    for (k, r), ts in lost.items():
        if len(ts) > 1:
            ops = [txns[t].index for t in ts]
            found(
                "lost-update",
                {
                    "key": k,
                    "read": list(r),
                    "txns": ops,
                    "explanation": f"ops {', '.join(map(str, ops))} each read key {show(k)} = "
                    f"{show(r)} and appended to it: each update was made without the others",
                },
            )


def _internal(
    t: Txn,
    k: Hashable,
    r: tuple[Any, ...],
    expected: tuple[Any, ...] | None,
    own: tuple[Any, ...] | None,
) -> dict[str, Any]:
    want = (
        f"{show(expected)} (its own earlier read and appends)"
        if expected is not None
        else f"a list ending in its own appends {show(own)}"
    )
    return {
        "txn": t.index,
        "key": k,
        "read": list(r),
        "explanation": f"op {t.index} read key {show(k)} = {show(r)} where it must see {want}",
    }


def _garbage(
    found: Findings,
    txns: Sequence[Txn],
    reads: dict[tuple[Any, ...], int],
    k: Hashable,
    i: int,
    e: object,
) -> None:
    reader = next(t for r, t in reads.items() if len(r) > i and r[i] == e)
    unwritten_read(found, txns[reader], None, k, e,
                   read=f"read {show(e)} in key {show(k)}", done=("appended", "appended"))  # fmt: skip


def _future(t: Txn, k: Hashable, v: object) -> dict[str, Any]:
    return {
        "txn": t.index,
        "key": k,
        "value": v,
        "explanation": f"op {t.index} read {show(v)} in key {show(k)}, which it appended only "
        "later (future read)",
    }
