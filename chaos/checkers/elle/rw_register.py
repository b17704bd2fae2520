"""Dependencies of a read-write register history, where they can be recovered.

Written values are unique per key, so a read of a value names its writer (``wr``). A register's
versions are not all ordered by what clients see: the order is known only

- from the initial state: ``nil`` precedes every written version of a key;
- where a transaction read a key and then wrote it (*writes follow reads*): the version it read
  precedes the one it wrote. Sound wherever a transaction reads committed data, so it is used only
  for models that forbid G1 (read-committed and stronger); under read-uncommitted it is left out,
  unless asked for (``--wfr-keys``);
- from what the user assumes of the database (:mod:`.options`: sequential or linearizable keys,
  its commit order), each source's pairs given by :mod:`.version_sources` and combined, a cycle
  left out and reported, by :mod:`.versions`.

Each known version pair ``a < b`` gives ``ww`` (writer of a, writer of b) and ``rw`` (every reader
of a, writer of b). Found without a cycle: a read of a value written by a failed transaction
(G1a) or by nobody (garbage), of a value its writer overwrote in the same transaction (G1b), a
read that disagrees with its own transaction's earlier write or read of the key (internal), two
transactions that read the same version and both wrote the key (lost update), and a cycle in a
key's version order (cyclic versions, :mod:`.versions`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.checkers.elle import version_sources as vs
from chaos.checkers.elle.graph import RW, WR, WW, DepGraph
from chaos.checkers.elle.inference import Findings, Inference, order_text, show, unwritten_read
from chaos.checkers.elle.options import VersionOrder
from chaos.checkers.elle.txns import READ, WRITE, Txn
from chaos.checkers.elle.versions import WORDS, VersionGraph, combine

__all__ = ["infer"]

MAX_RW_EDGES = 5_000_000  # anti-dependency edges inferred at most (see infer)
_NIL = None


class _Explainer:
    def __init__(self, writer: dict[tuple[Any, Any], int], versions: VersionGraph):
        self.writer = writer
        self.after = versions.after  # key -> version -> versions known to follow it directly
        self.source = versions.source  # (key, x, y) -> the source of x < y

    def explain(self, u: Txn, v: Txn, kind: int, a: str, b: str) -> dict[str, Any]:
        fixed = order_text(u, v, kind, a, b)
        if fixed is not None:
            return fixed
        w = self.writer
        if kind == WR:
            for k, x in _external_reads(v):
                if x is not None and w.get((k, x)) == u.id:
                    return {
                        "key": k,
                        "value": x,
                        "text": f"{b} read {a}'s write of {show(x)} to key {show(k)} (wr)",
                    }
        elif kind == WW:
            for k, x in _final_writes(u):
                for y in self.after.get(k, {}).get(x, ()):
                    if w.get((k, y)) == v.id:
                        return {
                            "key": k,
                            "value": y,
                            "text": f"{b}'s write of {show(y)} to key {show(k)} followed {a}'s "
                            f"write of {show(x)} (ww, {self._why(b, k, x, y)})",
                        }
        elif kind == RW:
            for k, x in _external_reads(u):
                for y in self.after.get(k, {}).get(x, ()):
                    if w.get((k, y)) == v.id:
                        seen = "the initial nil" if x is None else show(x)
                        return {
                            "key": k,
                            "value": y,
                            "text": f"{a} read key {show(k)} = {seen}, which {b}'s write of "
                            f"{show(y)} overwrote (rw, {self._why(b, k, x, y)})",
                        }
        return {"text": f"{a} < {b}"}  # not reached for an edge infer() added

    def _why(self, b: str, k: Hashable, x: object, y: object) -> str:
        src = "initial-state" if x is None else self.source.get((k, x, y), "initial-state")
        return WORDS[src].format(b=b, x=show(x), y=show(y))


def _external_reads(t: Txn) -> list[tuple[Any, Any]]:
    if t.type != "ok":
        return []
    touched: set[Any] = set()
    out = []
    for f, k, v in t.mops:
        if f == READ and k not in touched:
            out.append((k, v))
        touched.add(k)
    return out


def _final_writes(t: Txn) -> list[tuple[Any, Any]]:
    last: dict[Any, Any] = {}
    for f, k, v in t.mops:
        if f == WRITE:
            last[k] = v
    return list(last.items())


@dataclass(slots=True)
class _Scan:
    """What one pass over the transactions leaves for the steps after it."""

    writer: dict[tuple[Any, Any], int] = field(default_factory=dict)  # (key, value) -> txn
    dup: set[tuple[Any, Any]] = field(default_factory=set)
    failed: dict[tuple[Any, Any], int] = field(default_factory=dict)  # written by a failed txn
    intermediate: set[tuple[Any, Any]] = field(default_factory=set)  # its writer overwrote it
    readers: dict[tuple[Any, Any], list[int]] = field(default_factory=dict)  # external readers
    wfr: vs.Pairs = field(default_factory=dict)  # key -> (read, then written) version pairs
    lost: dict[tuple[Any, Any], list[int]] = field(default_factory=dict)
    external: list[tuple[int, Any, Any]] = field(default_factory=list)


def infer(
    txns: Sequence[Txn], *, writes_follow_reads: bool = True, order: VersionOrder | None = None
) -> Inference:
    """Infer the dependency graph and the non-cycle anomalies of an rw-register history;
    ``order`` holds the version-order assumptions asked for (none by default).

    The steps run in this order because each needs the one before: the writers, reads and
    writes-follow-reads pairs of the whole history, the version order from every source, then
    the edges from them. (The order also fixes the order of the anomalies found.)"""
    order = order or VersionOrder()
    found = Findings()
    s = _scan(txns, found, writes_follow_reads)
    versions, incomplete = _versions(txns, s, order, writes_follow_reads, found)
    # the initial nil precedes every version not already known to follow another
    has_pred = {(k, y) for k, succ in versions.after.items() for x, ys in succ.items()
                if x is not None for y in ys}  # fmt: skip
    for k, v in s.writer:
        if (k, v) not in has_pred:
            versions.after.setdefault(k, {}).setdefault(_NIL, set()).add(v)
    graph = DepGraph(len(txns))
    _read_edges(txns, s, graph, found)
    skipped_rw = _version_edges(s, versions.after, graph)
    _lost_updates(txns, s.lost, found)
    _duplicate_writes(txns, s.dup, found)
    stats = {
        "keys": len({k for k, _ in s.writer}),
        "writes": len(s.writer),
        "duplicate_writes": len(s.dup),
        "writes_follow_reads": writes_follow_reads,
        "version_order": {
            "assumed": order.named(),
            "pairs": versions.used,
            **({"left_out_for_cycles": versions.left_out} if versions.left_out else {}),
        },
    }
    explainer = _Explainer(s.writer, versions)
    inf = Inference(graph=graph, explainer=explainer, anomalies=found.listed(), stats=stats)
    inf.incomplete += incomplete
    if skipped_rw:
        inf.incomplete.append(
            f"{skipped_rw} anti-dependency (rw) edges were not inferred (more than "
            f"{MAX_RW_EDGES} readers x later versions)"
        )
    return inf


def _versions(
    txns: Sequence[Txn], s: _Scan, order: VersionOrder, wfr: bool, found: Findings
) -> tuple[VersionGraph, list[str]]:
    """Each key's version order from the sources in effect, in Elle's order; the reasons some
    pairs were left out for a bound."""
    sources: list[tuple[str, vs.Pairs]] = []
    incomplete: list[str] = []
    ends = vs.ends(txns) if order.sequential_keys or order.linearizable_keys else None
    if order.transaction_order is not None:
        sources.append(("transaction-order", vs.transaction_order(txns, order.transaction_order)))
    if wfr:
        sources.append(("writes-follow-reads", s.wfr))
    if ends is not None and order.sequential_keys:
        sources.append(("sequential-keys", vs.sequential_keys(txns, ends)))
    if ends is not None and order.linearizable_keys:
        pairs, skipped = vs.linearizable_keys(txns, ends)
        sources.append(("linearizable-keys", pairs))
        if skipped:
            incomplete.append(
                f"{skipped} real-time steps of the linearizable-keys version order were not "
                f"taken (more than {vs.MAX_REALTIME_STEPS})"
            )
    return combine(sources, found), incomplete


def _scan(txns: Sequence[Txn], found: Findings, writes_follow_reads: bool) -> _Scan:
    """One pass over the transactions: who wrote each value, the external reads and their
    readers, the version pairs a read-then-write proves, and the internal anomalies. One loop
    with its tables in locals: the hot part at 100k transactions."""
    s = _Scan()
    writer, dup, intermediate, readers = s.writer, s.dup, s.intermediate, s.readers
    external, lost, wfr = s.external, s.lost, s.wfr
    for t in txns:
        tid = t.id
        if t.type == "fail":
            for f, k, v in t.mops:
                if f == WRITE:
                    wk = (k, v)
                    if wk in writer or wk in s.failed:
                        dup.add(wk)
                    s.failed.setdefault(wk, tid)
            continue
        ok = t.type == "ok"
        state: dict[Any, Any] = {}
        ext: dict[Any, Any] = {}
        written: dict[Any, Any] = {}
        seen: dict[Any, set[Any]] = {}  # key -> values it read (future reads)
        for f, k, v in t.mops:
            if f == WRITE:
                wk = (k, v)
                if wk in writer or wk in s.failed:
                    dup.add(wk)
                if wk not in writer:
                    writer[wk] = tid
                if v is not None and v in seen.get(k, ()):
                    found("future-read", _future(t, k, v))
                if k in written:
                    intermediate.add((k, written[k]))
                written[k] = v
                state[k] = v
            elif f == READ and ok:
                seen.setdefault(k, set()).add(v)
                if k in state:
                    if state[k] != v:
                        found("internal", _internal(t, k, v, state[k], k in written))
                else:
                    ext[k] = v
                    external.append((tid, k, v))
                    readers.setdefault((k, v), []).append(tid)
                state[k] = v
        if ok:
            for k, x in ext.items():
                if k in written:
                    lost.setdefault((k, x), []).append(tid)
                    # nil needs no pair: it precedes every version anyway
                    if writes_follow_reads and x is not None and x != (y := written[k]):
                        wfr.setdefault(k, set()).add((x, y))
    return s


def _future(t: Txn, k: Hashable, v: object) -> dict[str, Any]:
    return {
        "txn": t.index,
        "key": k,
        "value": v,
        "explanation": f"op {t.index} read key {show(k)} = {show(v)}, which it wrote only later "
        "(future read)",
    }


def _duplicate_writes(txns: Sequence[Txn], dup: set[tuple[Any, Any]], found: Findings) -> None:
    """A value written to a key twice: a read of it no longer names its writer, so the key's
    versions cannot be recovered (Elle assumes unique writes)."""
    if not dup:
        return
    by: dict[tuple[Any, Any], list[int]] = {wk: [] for wk in dup}
    for t in txns:
        for f, k, v in t.mops:
            if f == WRITE and (k, v) in by:
                by[(k, v)].append(t.index)
    for (k, v), ops in by.items():
        found(
            "duplicate-writes",
            {
                "key": k,
                "value": v,
                "txns": ops,
                "explanation": f"{show(v)} was written to key {show(k)} more than once (ops "
                f"{', '.join(map(str, ops))}): a read of it cannot say which write it saw",
            },
        )


def _internal(t: Txn, k: Hashable, v: object, before: object, wrote: bool) -> dict[str, Any]:
    src = "wrote" if wrote else "read"
    return {
        "txn": t.index,
        "key": k,
        "read": v,
        "explanation": f"op {t.index} read key {show(k)} = {show(v)} after it {src} {show(before)}",
    }


def _read_edges(txns: Sequence[Txn], s: _Scan, graph: DepGraph, found: Findings) -> None:
    """``wr`` from the writer of each external read's value; a value nobody wrote is G1a or
    garbage, one its writer overwrote is G1b."""
    writer, dup, failed = s.writer, s.dup, s.failed
    for tid, k, x in s.external:
        if x is None:
            continue
        wk = (k, x)
        w = writer.get(wk)
        if w is None:
            aborted = txns[failed[wk]] if wk in failed else None
            unwritten_read(found, txns[tid], aborted, k, x,
                           read=f"read key {show(k)} = {show(x)}", done=("written", "wrote"))  # fmt: skip
            continue
        if wk in dup or w == tid:
            continue
        graph.add(w, tid, WR)
        if wk in s.intermediate:
            found(
                "G1b",
                {
                    "txns": [txns[w].index, txns[tid].index],
                    "key": k,
                    "value": x,
                    "explanation": f"op {txns[tid].index} read key {show(k)} = {show(x)}, which "
                    f"op {txns[w].index} wrote and then overwrote (intermediate read)",
                },
            )


def _version_edges(s: _Scan, after: dict[Any, dict[Any, set[Any]]], graph: DepGraph) -> int:
    """``ww`` and ``rw`` from each known version pair ``x < y``; returns how many ``rw`` edges
    were left out for the bound :data:`MAX_RW_EDGES`."""
    writer, dup = s.writer, s.dup
    budget = MAX_RW_EDGES
    skipped_rw = 0
    for k, succ in after.items():
        for x, ys in succ.items():
            wx = writer.get((k, x)) if x is not None and (k, x) not in dup else None
            rs = s.readers.get((k, x), ())
            if len(rs) * len(ys) > budget:
                # Every reader of a version against every version known to follow it: on one
                # key read as nil by thousands and blindly written by thousands, that product
                # is the whole graph. Left out and said: fewer edges miss anomalies, never
                # invent one, so the verdict can no longer be "valid".
                skipped_rw += len(rs) * len(ys)
                rs = ()
            else:
                budget -= len(rs) * len(ys)
            for y in ys:
                wy = writer.get((k, y))
                if wy is None or (k, y) in dup:
                    continue
                if wx is not None:
                    graph.add(wx, wy, WW)
                for r in rs:
                    graph.add(r, wy, RW)
    return skipped_rw


def _lost_updates(
    txns: Sequence[Txn], lost: dict[tuple[Any, Any], list[int]], found: Findings
) -> None:
    """Two committed transactions that read the same version of a key and both wrote it."""
    for (k, x), ts in lost.items():
        if len(ts) > 1:
            ops = [txns[t].index for t in ts]
            found(
                "lost-update",
                {
                    "key": k,
                    "read": x,
                    "txns": ops,
                    "explanation": f"ops {', '.join(map(str, ops))} each read key {show(k)} = "
                    f"{show(x)} and wrote it: each update was made without the others",
                },
            )
