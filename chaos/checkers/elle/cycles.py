"""Finding and naming cycles in the dependency graph, one strongly connected component at a time.

A cycle is named by the edges it uses (:func:`classify`):

=================  ============================================================================
G0                 ww edges only
G1c                ww and wr edges, at least one wr
G-single           exactly one rw edge, the rest ww/wr
G-nonadjacent      two or more rw edges, no two of them adjacent
G2-item            two or more rw edges, some adjacent
=================  ============================================================================

each with a ``-process`` variant (a process edge, no real-time one) and a ``-realtime`` one (a
real-time edge), where the model counts those orders.

Each component is searched in two passes. First, linear and complete, the *classes* a model's
verdict needs (after Elle's "cycle exists" pass), at each level of order edges: a cycle of ww
edges (G0), of ww/wr edges (G0 or G1c), one with no two rw edges adjacent (G0 to G-nonadjacent:
a cycle in the graph of (transaction, was the last edge rw)), or any cycle at all. A class with
no cycle rules out every type in it; one with a cycle yields a witness, named by its edges,
kept where the second pass did not find its type. Second, each type not yet found nor ruled out gets the exact search of :mod:`.search`, the
types the model forbids first. That search is exponential in the worst case and runs on a
budget (steps per type per component) and the deadline; a type it could not decide is kept in
:attr:`Found.unsearched`, never taken as absent.

A type is not searched where its weaker variant was found (a G-single already shows what a
G-single-process would), as in Elle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx

from chaos.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW, DepGraph
from chaos.checkers.elle.search import BASES, SUFFIXES, Budget, OutOfBudget, search, spec

__all__ = ["Cycle", "Found", "classify", "find_cycles", "types_for"]

MAX_STEPS = 200_000  # exact-search steps per anomaly type per component
_PREFER = (WR, WW, PROCESS, REALTIME, RW)
_CLASSES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    # name, data edges, the base types whose cycles it holds (and only those)
    ("ww", WW, ("G0",)),
    ("ww-wr", WW | WR, ("G0", "G1c")),
    ("nonadjacent", WW | WR | RW, ("G0", "G1c", "G-single", "G-nonadjacent")),
    ("any", WW | WR | RW, BASES),
)


@dataclass(frozen=True, slots=True)
class Cycle:
    """``nodes[i] -> nodes[i+1]`` (and the last back to the first) by the edge ``steps[i]``."""

    type: str
    nodes: tuple[int, ...]
    steps: tuple[int, ...]
    component_size: int


@dataclass
class Found:
    """The cycles found (one per reported type per component) and, per component the search
    could not finish, its size and the types it neither found nor ruled out."""

    cycles: list[Cycle] = field(default_factory=list)
    unsearched: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)


def classify(steps: Sequence[int]) -> str:
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


def _levels(order_edges: int) -> list[tuple[str, int]]:
    levels = [("", 0)]
    if order_edges & PROCESS:
        levels.append(("-process", PROCESS))
    if order_edges & REALTIME:
        levels.append(("-realtime", order_edges & (PROCESS | REALTIME)))
    return levels


def types_for(order_edges: int) -> list[str]:
    """Every cycle type a search with these order edges can name, weakest first."""
    return [b + s for s, _ in _levels(order_edges) for b in BASES]


def _pick(bits: int, mask: int) -> int:
    b = bits & mask
    for k in _PREFER:
        if b & k:
            return k
    raise AssertionError("an edge outside its mask")


def _adjacent_rw(kinds: Sequence[int]) -> bool:
    n = len(kinds)
    return any(kinds[i] == RW and kinds[(i + 1) % n] == RW for i in range(n))


def _simple(nodes: list[int], kinds: list[int]) -> tuple[list[int], list[int]]:
    """A simple cycle inside a closed walk with no two rw steps adjacent, itself with none: cut
    the walk where it passes a node twice and keep a part with none. (If the part between the
    two passes has two adjacent where it closes, the steps around it in the rest are not rw,
    so the rest has none.)"""
    while len(set(nodes)) != len(nodes):
        seen: dict[int, int] = {}
        for j, x in enumerate(nodes):
            if x in seen:
                i = seen[x]
                break
            seen[x] = j
        inner = (nodes[i:j], kinds[i:j])
        outer = (nodes[j:] + nodes[:i], kinds[j:] + kinds[:i])
        nodes, kinds = outer if _adjacent_rw(inner[1]) else inner
    return nodes, kinds


def _class_witness(
    g: DepGraph, comp: set[int], data: int, order: int, nonadjacent: bool
) -> tuple[list[int], list[int]] | None:
    """A cycle of the class, or None: linear (one depth-first search)."""
    mask = data | order
    if not nonadjacent:
        try:
            edges = nx.find_cycle(g.subgraph(comp, mask))
        except nx.NetworkXNoCycle:
            return None
        return [a for a, _ in edges], [_pick(g.succ[a][b], mask) for a, b in edges]
    other = mask & ~RW
    p = nx.DiGraph()
    for x in comp:
        for y, bits in g.succ[x].items():
            if y not in comp:
                continue
            if bits & other:
                k = _pick(bits, other)
                p.add_edge((x, False), (y, False), kind=k)
                p.add_edge((x, True), (y, False), kind=k)
            if bits & RW & mask:
                p.add_edge((x, False), (y, True), kind=RW)
    try:
        edges = nx.find_cycle(p)
    except nx.NetworkXNoCycle:
        return None
    return _simple([a[0] for a, _ in edges], [p.edges[a, b]["kind"] for a, b in edges])


class _Component:
    """One component's search: what is found, ruled out, left undecided."""

    def __init__(self, g: DepGraph, comp: set[int], order_edges: int) -> None:
        self.g, self.comp, self.order_edges = g, comp, order_edges
        self.found: dict[str, Cycle] = {}
        self.absent: set[str] = set()
        self.witnesses: list[tuple[list[int], list[int]]] = []

    def add(self, nodes: Sequence[int], kinds: Sequence[int]) -> None:
        t = classify(kinds)
        if t not in self.found:
            self.found[t] = Cycle(t, tuple(nodes), tuple(kinds), len(self.comp))

    def classes(self) -> None:
        for suffix, order in _levels(self.order_edges):
            below = SUFFIXES[: SUFFIXES.index(suffix) + 1]
            for name, data, bases in _CLASSES:
                w = _class_witness(self.g, self.comp, data, order, name == "nonadjacent")
                if w is None:
                    self.absent.update(b + s for b in bases for s in below)
                else:
                    self.witnesses.append(w)

    def implied(self, t: str) -> bool:
        """Whether a weaker variant of ``t`` (fewer order edges) was found."""
        suffix = next((s for s in SUFFIXES[1:] if t.endswith(s)), "")
        base = t[: len(t) - len(suffix)]
        return any(base + s in self.found for s in SUFFIXES[: SUFFIXES.index(suffix)])

    def exact(self, t: str, deadline: float) -> bool:
        """Search type ``t``; False when the budget or the deadline ran out first."""
        try:
            c = search(self.g, self.comp, spec(t, self.order_edges), Budget(MAX_STEPS, deadline))
        except OutOfBudget:
            return False
        if c is None:
            self.absent.add(t)
        else:
            self.add(*c)
        return True


def find_cycles(
    graph: DepGraph,
    order_edges: int,
    deadline: float,
    forbidden: Callable[[str], bool] = lambda t: True,
) -> Found:
    """The named cycles of every strongly connected component over the data edges plus
    ``order_edges``: at most one per anomaly type per component, none of a type whose weaker
    variant was found there; and what was left unsearched. Types ``forbidden`` says true of are
    searched first."""
    out = Found()
    types = types_for(order_edges)
    ordered = [t for t in types if forbidden(t)] + [t for t in types if not forbidden(t)]
    for comp in graph.cyclic_components(WW | WR | RW | order_edges):
        c = _Component(graph, comp, order_edges)
        c.classes()  # linear: runs whatever the deadline
        left = []
        for t in ordered:
            if t in c.found or t in c.absent or c.implied(t):
                continue
            if time.monotonic() > deadline or not c.exact(t, deadline):
                left.append(t)
        for w in c.witnesses:  # the exact search keeps the shortest; these, what it missed
            c.add(*w)
        left = [t for t in left if t not in c.found]
        out.cycles += [cy for t, cy in c.found.items() if not c.implied(t)]
        left = [t for t in left if not c.implied(t)]
        if left:
            out.unsearched.append((len(comp), tuple(sorted(left, key=types.index))))
    return out
