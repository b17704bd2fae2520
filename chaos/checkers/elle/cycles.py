"""Finding and naming cycles in the dependency graph, one strongly connected component at a time.

In each component the search asks, weakest anomaly first, for the shortest cycle through some
edge of the kind the anomaly needs (an edge ``u -> v`` plus a shortest path ``v -> u``):

=================  ============================================================================
G0                 ww edges only
G1c                ww and wr edges, at least one wr
G-single           exactly one rw edge, the rest ww/wr
G-nonadjacent      two or more rw edges, no two of them adjacent
G2-item            two or more rw edges, some adjacent
=================  ============================================================================

and then, where the model counts them, the same with process edges (``-process``) and with
real-time edges (``-realtime``) allowed. A cycle is named by the edges it actually uses, not by
what was asked. Shortest paths come from networkx's BFS on the component's subgraph; the two
searches that must count rw edges (G-nonadjacent, G2-item) walk a small product graph (node, was
the last edge rw, was another rw used) in plain Python. The search stops at a deadline; what it
found until then is kept and the result says the search was cut short.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import networkx as nx

from chaos.checkers.elle.consistency import CYCLE_TYPES
from chaos.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW, DepGraph

__all__ = ["Cycle", "classify", "find_cycles"]

CANDIDATES = 64  # edges tried per anomaly type per component: the shortest cycle among them
_PREFER = (WR, WW, PROCESS, REALTIME, RW)


@dataclass(frozen=True, slots=True)
class Cycle:
    """``nodes[i] -> nodes[i+1]`` (and the last back to the first) by the edge ``steps[i]``."""

    type: str
    nodes: tuple[int, ...]
    steps: tuple[int, ...]
    component_size: int


def classify(steps: tuple[int, ...]) -> str:
    """The anomaly a cycle with these edge kinds is (Adya's names, Elle's variants)."""
    rw = sum(1 for s in steps if s == RW)
    if rw == 1:
        base = "G-single"
    elif rw > 1:
        n = len(steps)
        adjacent = any(steps[i] == RW and steps[(i + 1) % n] == RW for i in range(n))
        base = "G2-item" if adjacent else "G-nonadjacent"
    elif WR in steps:
        base = "G1c"
    else:
        base = "G0"
    if REALTIME in steps:
        return f"{base}-realtime"
    if PROCESS in steps:
        return f"{base}-process"
    return base


def _pick(bits: int, mask: int) -> int:
    b = bits & mask
    for k in _PREFER:
        if b & k:
            return k
    raise AssertionError("an edge outside its mask")


class _Search:
    def __init__(self, graph: DepGraph, comp: set[int], deadline: float) -> None:
        self.g = graph
        self.comp = comp
        self.deadline = deadline
        self.cut_short = False
        self._nx: dict[int, nx.DiGraph] = {}

    def expired(self) -> bool:
        if time.monotonic() > self.deadline:
            self.cut_short = True
        return self.cut_short

    def nxgraph(self, mask: int) -> nx.DiGraph:
        h = self._nx.get(mask)
        if h is None:
            h = self._nx[mask] = self.g.subgraph(self.comp, mask)
        return h

    def edges(self, kind: int) -> Iterator[tuple[int, int]]:
        comp = self.comp
        for u in sorted(comp):
            for v, b in self.g.succ[u].items():
                if b & kind and v in comp:
                    yield u, v

    def close(self, u: int, v: int, kind: int, path: list[int], mask: int) -> Cycle:
        """The cycle ``u -kind-> v -path-> u``; the path's steps picked within ``mask``."""
        nodes = (u, *path[:-1])
        succ = self.g.succ
        steps = (kind, *(_pick(succ[a][b], mask) for a, b in pairwise(path)))
        return Cycle(classify(steps), nodes, steps, len(self.comp))

    def by_path(self, first: int, mask: int) -> Cycle | None:
        """The shortest cycle found through an edge of kind ``first`` and a path within
        ``mask``, over at most :data:`CANDIDATES` such edges."""
        h = self.nxgraph(mask)
        best: Cycle | None = None
        for i, (u, v) in enumerate(self.edges(first)):
            if i >= CANDIDATES or self.expired():
                break
            try:
                path = nx.bidirectional_shortest_path(h, v, u)
            except nx.NetworkXNoPath:
                continue
            c = self.close(u, v, _pick(self.g.succ[u][v], first), path, mask)
            if best is None or len(c.nodes) < len(best.nodes):
                best = c
                if len(c.nodes) == 2:
                    break
        return best

    def by_states(self, other: int, nonadjacent: bool) -> Cycle | None:
        """Cycles with two or more rw edges: BFS over (node, last edge rw, another rw used)
        from the head of an rw edge back to its tail."""
        succ, comp = self.g.succ, self.comp
        best: Cycle | None = None
        for i, (u, v) in enumerate(self.edges(RW)):
            if i >= CANDIDATES or self.expired():
                break
            start = (v, True, False)
            parent: dict[tuple[int, bool, bool], tuple[tuple[int, bool, bool], int] | None] = {
                start: None
            }
            queue = deque([start])
            goal = None
            while queue:
                state = queue.popleft()
                x, last, more = state
                if x == u and more and not (nonadjacent and last):
                    goal = state
                    break
                for y, b in succ[x].items():
                    if y not in comp:
                        continue
                    if b & other:
                        nxt = (y, False, more)
                        if nxt not in parent:
                            parent[nxt] = (state, _pick(b, other))
                            queue.append(nxt)
                    if b & RW and not (nonadjacent and last):
                        nxt = (y, True, True)
                        if nxt not in parent:
                            parent[nxt] = (state, RW)
                            queue.append(nxt)
            if goal is None:
                continue
            rev_nodes: list[int] = []
            rev_steps: list[int] = []
            s = goal
            while parent[s] is not None:
                prev, k = parent[s]  # type: ignore[misc]
                rev_nodes.append(s[0])
                rev_steps.append(k)
                s = prev
            path_nodes = [v, *reversed(rev_nodes)]  # v ... u
            nodes = (u, *path_nodes[:-1])
            if len(set(nodes)) != len(nodes):
                continue  # the product graph allows walks through a node twice: not a cycle
            steps = (RW, *reversed(rev_steps))
            c = Cycle(classify(steps), nodes, steps, len(comp))
            if best is None or len(c.nodes) < len(best.nodes):
                best = c
                if len(c.nodes) <= 3:
                    break
        return best

    def fallback(self, mask: int) -> Cycle:
        """Some cycle of the component, when the named searches found none in time."""
        h = self.nxgraph(mask)
        edges = nx.find_cycle(h)
        nodes = tuple(a for a, _ in edges)
        steps = tuple(_pick(self.g.succ[a][b], mask) for a, b in edges)
        return Cycle(classify(steps), nodes, steps, len(self.comp))


def _levels(order_edges: int) -> list[int]:
    levels = [0]
    if order_edges & PROCESS:
        levels.append(PROCESS)
    if order_edges & REALTIME:
        levels.append(PROCESS | REALTIME)
    return levels


def find_cycles(
    graph: DepGraph, order_edges: int, deadline: float
) -> tuple[list[Cycle], list[int]]:
    """The named cycles of every strongly connected component over the data edges plus
    ``order_edges``, at most one per anomaly type per component; and the sizes of the components
    whose search the deadline cut short."""
    found: list[Cycle] = []
    cut: list[int] = []
    for comp in graph.cyclic_components(WW | WR | RW | order_edges):
        s = _Search(graph, comp, deadline)
        names: set[str] = set()
        for level in _levels(order_edges):
            for base in CYCLE_TYPES:
                if base in names or s.expired():
                    continue  # a cycle without order edges already shows this anomaly
                c: Cycle | None
                if base == "G0":
                    c = s.by_path(WW | level, WW | level)
                elif base == "G1c":
                    c = s.by_path(WR, WW | WR | level)
                elif base == "G-single":
                    c = s.by_path(RW, WW | WR | level)
                else:
                    c = s.by_states(WW | WR | level, nonadjacent=base == "G-nonadjacent")
                if c is not None and c.type not in names:
                    names.add(c.type)
                    found.append(c)
        if not names:
            found.append(s.fallback(WW | WR | RW | order_edges))
        if s.cut_short:
            cut.append(len(comp))
    return found, cut
