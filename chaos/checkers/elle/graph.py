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
DATA = WW | WR | RW
KIND_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}


class DepGraph:
    """Edges between transactions by id (``Txn.id``). Self-edges are never stored: a transaction
    that depends on itself is an internal anomaly, found apart."""

    def __init__(self, n: int) -> None:
        self.succ: list[dict[int, int]] = [{} for _ in range(n)]

    def add(self, u: int, v: int, kind: int) -> None:
        if u != v:
            d = self.succ[u]
            d[v] = d.get(v, 0) | kind

    def edge_count(self, mask: int) -> int:
        return sum(1 for d in self.succ for b in d.values() if b & mask)

    def add_process_order(self, txns: Sequence[Txn]) -> None:
        """One process runs one transaction at a time: an ``ok`` one precedes the process's
        next. Not after an ``info`` one: the client gave up waiting, the transaction may still
        take effect later."""
        last: dict[object, Txn] = {}
        for t in sorted(
            (t for t in txns if t.process is not None and t.invoke_pos is not None),
            key=lambda t: t.invoke_pos or 0,
        ):
            prev = last.get(t.process)
            if prev is not None and prev.type == "ok":
                self.add(prev.id, t.id, PROCESS)
            last[t.process] = t

    def add_realtime_order(self, txns: Sequence[Txn]) -> None:
        """``u`` precedes ``v`` when ``u`` completed (``ok``) before ``v`` was invoked.

        Only the transitive reduction's worth of edges: a sweep over the history keeps the
        frontier of completed transactions that no later-completed one is known to follow; each
        invocation takes an edge from every frontier member, and a completion retires the members
        it already follows. An ``info`` transaction never completes (it gets edges in, none out).
        """
        events: list[tuple[int, int, Txn]] = []
        for t in txns:
            if t.type == "fail":
                continue
            if t.invoke_pos is not None:
                events.append((t.invoke_pos, 0, t))
            if t.type == "ok" and t.complete_pos is not None:
                events.append((t.complete_pos, 1, t))
        events.sort(key=lambda e: (e[0], e[1]))
        frontier: tuple[int, ...] = ()
        seen_at_invoke: dict[int, tuple[int, ...]] = {}
        succ = self.succ
        for _, what, t in events:
            tid = t.id
            if what == 0:
                seen_at_invoke[tid] = frontier
                for u in frontier:
                    if u != tid:
                        d = succ[u]
                        d[tid] = d.get(tid, 0) | REALTIME
            else:
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
        nodes = set(range(len(succ))) if within is None else set(within)
        out_deg: dict[int, int] = {}
        preds: dict[int, list[int]] = {u: [] for u in nodes}
        for u in nodes:
            n = 0
            for v, b in succ[u].items():
                if b & mask and v in nodes:
                    n += 1
                    preds[v].append(u)
            out_deg[u] = n
        in_deg = {u: len(p) for u, p in preds.items()}
        # Trim: a node with no edge in or no edge out lies on no cycle; removing it may expose
        # more such nodes. Plain loops: in a valid history this removes everything.
        stack = [u for u in nodes if not in_deg[u] or not out_deg[u]]
        alive = set(nodes)
        while stack:
            u = stack.pop()
            if u not in alive:
                continue
            alive.discard(u)
            for v, b in succ[u].items():
                if b & mask and v in alive:
                    in_deg[v] -= 1
                    if not in_deg[v]:
                        stack.append(v)
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
