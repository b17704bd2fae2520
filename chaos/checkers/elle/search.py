"""The exact search for one anomaly type's cycle in one strongly connected component.

A type (:class:`Spec`) says which edge kinds its cycle may use and what it must hold: G0 only
ww; G1c ww/wr with a wr; G-single exactly one rw; G-nonadjacent two or more rw, no two adjacent;
G2-item two or more rw, two adjacent; ``-process`` at least one process edge and no real-time
one; ``-realtime`` at least one real-time edge. Every cycle of the type holds an edge of its
*start* kind (the one it cannot do without), so the search tries each such edge ``u -> v`` whose
ends lie in one strongly connected component of the type's edges, and looks for the way back
``v -> u``:

1. a breadth-first search over (transaction, what the walk has used so far): the shortest walk
   back that makes the type. None for any start edge proves the type absent: a cycle is a walk.
2. A walk that passes a transaction twice is not a cycle; only then, a depth-first search over
   simple paths from the same edge, which is exponential in the worst case (a cycle through two
   given edges is NP-hard to find in a directed graph), so it runs on a step budget.

A search that runs out of steps or time raises :class:`OutOfBudget`: the type is then neither
found nor ruled out, and the caller says so.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import networkx as nx

from chaos.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW, DepGraph

__all__ = [
    "BASES",
    "SUFFIXES",
    "Budget",
    "OutOfBudget",
    "Spec",
    "search",
    "spec",
]

BASES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
SUFFIXES = ("", "-process", "-realtime")
_BASE_KINDS = {"G0": WW, "G1c": WW | WR}  # the rest: WW | WR | RW
_KINDS = (WW, WR, RW, PROCESS, REALTIME)

# what a walk has used so far, as bits
_RW1, _RW2, _LAST, _ADJ, _WR, _PROC, _RT = 1, 2, 4, 8, 16, 32, 64


class OutOfBudget(Exception):
    """The search ran out of steps or time before it could find or rule out the type."""


class Budget:
    """Steps left and a deadline (``time.monotonic``); :meth:`tick` raises when either runs out."""

    def __init__(self, steps: int, deadline: float) -> None:
        self.steps = steps
        self.deadline = deadline

    def tick(self, n: int = 1) -> None:
        self.steps -= n
        if self.steps < 0:
            raise OutOfBudget("step budget")
        if not self.steps & 0x3FF and time.monotonic() > self.deadline:
            raise OutOfBudget("time limit")


@dataclass(frozen=True, slots=True)
class Spec:
    """One anomaly type as the search sees it."""

    name: str
    base: str
    suffix: str
    mask: int  # edge kinds a step may take
    start: int  # the kind every cycle of the type holds
    keep: int  # the walk bits that matter for it

    def step(self, flags: int, kind: int) -> int:
        """The walk's bits after a step of ``kind``, or -1 where no cycle of the type can go."""
        if kind == RW:
            if flags & _RW1:
                if self.base == "G-single" or (flags & _LAST and self.base == "G-nonadjacent"):
                    return -1
                nf = flags | _RW2
            else:
                nf = flags | _RW1
            if flags & _LAST:
                nf |= _ADJ
            return (nf | _LAST) & self.keep
        nf = flags & ~_LAST
        if kind == WR:
            nf |= _WR
        elif kind == PROCESS:
            nf |= _PROC
        elif kind == REALTIME:
            nf |= _RT
        return nf & self.keep

    def accepts(self, flags: int) -> bool:
        """Whether a closed walk with these bits (back at the start edge's tail) is the type."""
        if self.suffix == "-process" and not flags & _PROC:
            return False
        if self.suffix == "-realtime" and not flags & _RT:
            return False
        if self.base == "G1c":
            return bool(flags & _WR)
        if self.base == "G-single":
            return bool(flags & _RW1) and not flags & _RW2
        if self.base in ("G-nonadjacent", "G2-item"):
            # the last step is followed by the first, an rw edge
            adjacent = bool(flags & _ADJ or flags & _LAST)
            return bool(flags & _RW2) and adjacent == (self.base == "G2-item")
        return True


def spec(name: str, order_edges: int) -> Spec:
    """The :class:`Spec` of the type ``name`` (a base and a suffix), its order edges limited to
    ``order_edges``."""
    suffix = next((s for s in SUFFIXES[1:] if name.endswith(s)), "")
    base = name[: len(name) - len(suffix)]
    order = {"": 0, "-process": PROCESS, "-realtime": PROCESS | REALTIME}[suffix] & order_edges
    mask = _BASE_KINDS.get(base, WW | WR | RW) | order
    if base == "G0":
        start = {"": WW, "-process": PROCESS, "-realtime": REALTIME}[suffix]
    else:
        start = WR if base == "G1c" else RW
    keep = _LAST
    if base in ("G-single", "G-nonadjacent", "G2-item"):
        keep |= _RW1 | _RW2 | _ADJ
    if base == "G1c":
        keep |= _WR
    keep |= {"": 0, "-process": _PROC, "-realtime": _RT}[suffix]
    return Spec(name=name, base=base, suffix=suffix, mask=mask, start=start, keep=keep)


def _kinds(bits: int) -> Iterator[int]:
    for k in _KINDS:
        if bits & k:
            yield k


def _start_edges(g: DepGraph, comp: set[int], s: Spec) -> list[tuple[int, int]]:
    """Edges of the start kind whose ends share a strongly connected component of the type's
    edges (no other lies on a cycle of the type)."""
    if not s.start & s.mask:
        return []
    h = g.subgraph(comp, s.mask)
    where: dict[int, int] = {}
    for i, c in enumerate(nx.strongly_connected_components(h)):
        if len(c) > 1:
            where.update(dict.fromkeys(c, i))
    return [
        (u, v)
        for u in sorted(where)
        for v, b in g.succ[u].items()
        if b & s.start and where.get(v, -1) == where[u]
    ]


def _bfs(
    g: DepGraph, comp: set[int], s: Spec, u: int, v: int, budget: Budget
) -> tuple[list[int], list[int]] | None:
    """The shortest walk ``v -> ... -> u`` that closes the type's cycle through ``u -> v``:
    its nodes (``v`` first, ``u`` last) and the kinds of its steps; None if there is none."""
    start = (v, s.step(0, s.start))
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    succ, mask = g.succ, s.mask
    while queue:
        state = queue.popleft()
        x, f = state
        if x == u and s.accepts(f):
            nodes, kinds = [x], []
            link = parent[state]
            while link is not None:
                state, k = link
                nodes.append(state[0])
                kinds.append(k)
                link = parent[state]
            return nodes[::-1], kinds[::-1]
        budget.tick()
        for y, bits in succ[x].items():
            if y not in comp or not bits & mask:
                continue
            for k in _kinds(bits & mask):
                nf = s.step(f, k)
                if nf >= 0 and (y, nf) not in parent:
                    parent[(y, nf)] = (state, k)
                    queue.append((y, nf))
    return None


def _dfs(
    g: DepGraph, comp: set[int], s: Spec, u: int, v: int, budget: Budget
) -> tuple[list[int], list[int]] | None:
    """A simple path ``v -> ... -> u`` closing the type's cycle through ``u -> v``, by trying
    them all (on the budget); None when there is none."""
    succ, mask = g.succ, s.mask
    on_path = {u, v}
    nodes: list[int] = [v]
    kinds: list[int] = []
    # each frame: (node, walk bits, iterator over its next steps)
    stack = [(v, s.step(0, s.start), _steps(succ, comp, mask, v))]
    while stack:
        _, f, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            on_path.discard(nodes.pop())
            if kinds:
                kinds.pop()
            continue
        budget.tick()
        y, k = nxt
        nf = s.step(f, k)
        if nf < 0:
            continue
        if y == u:
            if s.accepts(nf):
                return [*nodes, u], [*kinds, k]
            continue
        if y in on_path:
            continue
        on_path.add(y)
        nodes.append(y)
        kinds.append(k)
        stack.append((y, nf, _steps(succ, comp, mask, y)))
    return None


def _steps(
    succ: list[dict[int, int]], comp: set[int], mask: int, x: int
) -> Iterator[tuple[int, int]]:
    for y, bits in succ[x].items():
        if y in comp and bits & mask:
            for k in _kinds(bits & mask):
                yield y, k


def search(
    g: DepGraph, comp: set[int], s: Spec, budget: Budget
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The shortest cycle of type ``s`` in ``comp`` the breadth-first searches saw (or, where
    they saw only walks, the first simple one the depth-first search finds) as (nodes, kinds of
    the steps from each node to the next); None when there is none. Raises
    :class:`OutOfBudget` when the budget runs out before any was found."""
    best: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    walked: list[tuple[int, int]] = []  # start edges with a walk back, but no simple one yet
    try:
        for u, v in _start_edges(g, comp, s):
            found = _bfs(g, comp, s, u, v, budget)
            if found is None:
                continue
            nodes, kinds = found
            if len(set(nodes)) != len(nodes):  # v .. u, u last: a cycle once closed by u -> v
                walked.append((u, v))
            elif best is None or len(nodes) < len(best[0]):
                best = (u, *nodes[:-1]), (s.start, *kinds)
                if len(nodes) == 2:
                    break
        for u, v in walked if best is None else ():
            found = _dfs(g, comp, s, u, v, budget)
            if found is not None:
                nodes, kinds = found
                return (u, *nodes[:-1]), (s.start, *kinds)
    except OutOfBudget:
        if best is None:
            raise
    return best
