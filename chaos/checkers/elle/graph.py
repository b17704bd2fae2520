"""The transaction dependency graph: edges carry a bit per relation, so one graph answers every
consistency model (each model reads the edges it counts through a mask).

``succ[u][v]`` holds the relations by which transaction ``u`` precedes ``v``: ``WW`` (``v``
overwrote or appended after ``u``'s version), ``WR`` (``v`` read ``u``'s write), ``RW`` (``u``
read a version ``v`` overwrote: an anti-dependency), ``PROCESS`` (one process ran ``u`` then
``v``) and ``REALTIME`` (``u`` completed before ``v`` was invoked). Plain dicts, built by plain
loops: the inference is the hot part. Cycles are looked for only where one can be: nodes with no
edge in or none out are trimmed first (in a valid history that is all of them), and what remains
goes to networkx for its strongly connected components.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import networkx as nx

from chaos.checkers.elle.txns import Txn

__all__ = [
    "DATA",
    "KIND_NAMES",
    "PROCESS",
    "REALTIME",
    "RW",
    "WR",
    "WW",
    "DepGraph",
]

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
MAX_REALTIME_EDGES = 20_000_000
_NONE = 1 << 62  # a history position with no transaction's invocation or completion
DATA = WW | WR | RW
KIND_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}


class DepGraph:
    """Edges between transactions by id (``Txn.id``). Self-edges are never stored: a transaction
    that depends on itself is an internal anomaly, found apart."""

    def __init__(self, n: int) -> None:
        self.succ: list[dict[int, int]] = [{} for _ in range(n)]
        # why edges the history proves were left out (a bound hit): then it cannot be valid
        self.incomplete: list[str] = []

    def add(self, u: int, v: int, kind: int) -> None:
        if u != v:
            d = self.succ[u]
            d[v] = d.get(v, 0) | kind

    def pair_count(self) -> int:
        """Ordered pairs with at least one edge between them (any relation)."""
        return sum(map(len, self.succ))

    def _positions(self, txns: Sequence[Txn]) -> list[int]:
        """The history positions' events in order: ``tid`` for an invocation, ``~tid`` for a
        completion (no sort: positions are dense)."""
        top = 0
        for t in txns:
            top = max(top, t.invoke_pos or 0, t.complete_pos or 0)
        at = [_NONE] * (top + 1)
        for t in txns:
            if t.invoke_pos is not None:
                at[t.invoke_pos] = t.id
            if t.complete_pos is not None:
                at[t.complete_pos] = ~t.id
        return at

    def add_process_order(self, txns: Sequence[Txn]) -> None:
        """One process runs one transaction at a time: an ``ok`` one precedes the process's
        next. Not after an ``info`` one: the client gave up waiting, the transaction may still
        take effect later."""
        last: dict[object, Txn] = {}
        for tid in self._positions(txns):
            if tid < 0 or tid == _NONE:
                continue
            t = txns[tid]
            if t.process is None:
                continue
            prev = last.get(t.process)
            if prev is not None and prev.type == "ok":
                self.add(prev.id, tid, PROCESS)
            last[t.process] = t

    def add_realtime_order(self, txns: Sequence[Txn]) -> None:
        """``u`` precedes ``v`` when ``u`` completed (``ok``) before ``v`` was invoked.

        Only the transitive reduction's worth of edges: a sweep over the history keeps the
        frontier of completed transactions that no later-completed one is known to follow; each
        invocation takes an edge from every frontier member, and a completion retires the members
        it already follows. An ``info`` transaction never completes (it gets edges in, none out);
        a ``fail`` one never happened.
        """
        frontier: tuple[int, ...] = ()
        seen_at_invoke: dict[int, tuple[int, ...]] = {}
        succ = self.succ
        budget = MAX_REALTIME_EDGES
        for e in self._positions(txns):
            if e == _NONE:
                continue
            if e >= 0:
                if txns[e].type == "fail":
                    continue
                seen_at_invoke[e] = frontier
                budget -= len(frontier)
                if budget < 0:
                    # a frontier this wide for this long is a history built against the sweep
                    # (thousands completed together, then thousands invoked): left out, said
                    self.incomplete.append(
                        f"real-time edges past the first {MAX_REALTIME_EDGES} were not added"
                    )
                    return
                for u in frontier:
                    d = succ[u]
                    d[e] = d.get(e, 0) | REALTIME
                continue
            tid = ~e
            if txns[tid].type != "ok":
                continue
            before = seen_at_invoke.pop(tid, ())
            if before:
                gone = set(before)
                frontier = (*(u for u in frontier if u not in gone), tid)
            else:
                frontier = (*frontier, tid)

    def cyclic_components(self, mask: int, within: Iterable[int] | None = None) -> list[set[int]]:
        """The strongly connected components of more than one transaction, over the edges
        ``mask`` selects (and only among ``within`` if given), smallest first."""
        succ = self.succ
        nodes = range(len(succ)) if within is None else set(within)
        inside = None if within is None else nodes
        # Trim forwards, then backwards: a node no edge enters (or none leaves) lies on no
        # cycle, and removing it may expose more. Kahn's algorithm in plain loops; in a valid
        # history the forward pass alone removes everything.
        in_deg = dict.fromkeys(nodes, 0)
        for u in nodes:
            for v, b in succ[u].items():
                if b & mask and (inside is None or v in inside):
                    in_deg[v] += 1
        stack = [u for u, d in in_deg.items() if not d]
        while stack:
            u = stack.pop()
            del in_deg[u]
            for v, b in succ[u].items():
                if b & mask and v in in_deg:
                    in_deg[v] -= 1
                    if not in_deg[v]:
                        stack.append(v)
        alive = set(in_deg)
        if not alive:
            return []
        out_deg = dict.fromkeys(alive, 0)
        preds: dict[int, list[int]] = {u: [] for u in alive}
        for u in alive:
            for v, b in succ[u].items():
                if b & mask and v in alive:
                    out_deg[u] += 1
                    preds[v].append(u)
        stack = [u for u, d in out_deg.items() if not d]
        while stack:
            u = stack.pop()
            alive.discard(u)
            for p in preds[u]:
                if p in alive:
                    out_deg[p] -= 1
                    if not out_deg[p]:
                        stack.append(p)
        if not alive:
            return []
        g = nx.DiGraph()
        g.add_nodes_from(alive)
        g.add_edges_from(
            (u, v) for u in alive for v, b in succ[u].items() if b & mask and v in alive
        )
        comps = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
        comps.sort(key=len)
        return comps

    def subgraph(self, nodes: set[int], mask: int) -> nx.DiGraph:
        """The edges ``mask`` selects among ``nodes``, as a networkx graph."""
        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        succ = self.succ
        g.add_edges_from(
            (u, v) for u in nodes for v, b in succ[u].items() if b & mask and v in nodes
        )
        return g
