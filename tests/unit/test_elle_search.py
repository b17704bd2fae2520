"""The cycle search against brute force: on small random dependency graphs, every anomaly
type's existence as decided by enumerating every simple cycle (and every choice of edge kind
along it) must be the search's answer, and the cycles reported must be real."""

from __future__ import annotations

import itertools
import math

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checkers.elle.cycles import classify, find_cycles, types_for
from chaos.checkers.elle.graph import PROCESS, REALTIME, RW, WR, WW, DepGraph
from chaos.checkers.elle.search import SUFFIXES, Budget, search, spec
from tests.fuzz import examples

KINDS = (WW, WR, RW, PROCESS, REALTIME)
ORDERS = (0, PROCESS, PROCESS | REALTIME)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[DepGraph, int]:
    n = draw(st.integers(2, 6))
    g = DepGraph(n)
    for u, v in itertools.permutations(range(n), 2):
        bits = draw(st.sampled_from([0, 0, 0, WW, WR, RW, RW, WW | RW, WR | RW, PROCESS,
                                     REALTIME, PROCESS | REALTIME, WW | PROCESS]))  # fmt: skip
        if bits:
            g.add(u, v, bits)
    return g, draw(st.sampled_from(ORDERS))


def brute(g: DepGraph, comp: set[int], order_edges: int) -> set[str]:
    """Every type some simple cycle in ``comp`` is, under some choice of kinds."""
    allowed = WW | WR | RW | order_edges
    h = g.subgraph(comp, allowed)
    out: set[str] = set()
    for cyc in nx.simple_cycles(h):
        pairs = list(zip(cyc, cyc[1:] + cyc[:1], strict=True))
        choices = [[k for k in KINDS if g.succ[a][b] & allowed & k] for a, b in pairs]
        for steps in itertools.product(*choices):
            out.add(classify(steps))
    return out


def _weaker_found(t: str, types: set[str]) -> bool:
    suffix = next((s for s in SUFFIXES[1:] if t.endswith(s)), "")
    base = t[: len(t) - len(suffix)]
    return any(base + s in types for s in SUFFIXES[: SUFFIXES.index(suffix)])


@settings(max_examples=examples(400), deadline=None)
@given(graphs())
def test_every_types_existence_is_the_brute_force_answer(case: tuple[DepGraph, int]) -> None:
    g, order_edges = case
    for comp in g.cyclic_components(WW | WR | RW | order_edges):
        truth = brute(g, comp, order_edges)
        for t in types_for(order_edges):
            c = search(g, comp, spec(t, order_edges), Budget(10**7, math.inf))
            assert (c is not None) == (t in truth), (t, truth)
            if c is not None:
                nodes, steps = c
                assert len(set(nodes)) == len(nodes) and classify(steps) == t
                for a, b, k in zip(nodes, nodes[1:] + nodes[:1], steps, strict=True):
                    assert g.succ[a][b] & k


@settings(max_examples=examples(400), deadline=None)
@given(graphs())
def test_the_reported_types_are_those_that_exist_less_the_implied(
    case: tuple[DepGraph, int],
) -> None:
    """Per component: every type that exists is reported unless its weaker variant (fewer order
    edges) is; nothing is left unsearched; every cycle reported is one of the graph's."""
    g, order_edges = case
    found = find_cycles(g, order_edges, math.inf)
    assert not found.unsearched
    for comp in g.cyclic_components(WW | WR | RW | order_edges):
        truth = brute(g, comp, order_edges)
        got = [c for c in found.cycles if set(c.nodes) <= comp]
        assert sorted(c.type for c in got) == sorted(
            t for t in truth if not _weaker_found(t, truth)
        )
        for c in got:
            assert classify(c.steps) == c.type and len(set(c.nodes)) == len(c.nodes)
            n = len(c.nodes)
            for i, k in enumerate(c.steps):
                assert g.succ[c.nodes[i]][c.nodes[(i + 1) % n]] & k


def test_a_cycle_through_two_required_edges_that_the_shortest_walk_misses() -> None:
    """G1c-process needs a wr and a process edge: here the shortest walk back through the wr
    edge passes a node twice, and only the depth-first search finds the simple cycle."""
    g = DepGraph(5)
    g.add(0, 1, WR)  # the start edge
    g.add(1, 2, WW)
    g.add(2, 1, PROCESS)  # the short walk: 1 -> 2 -> 1 (process) -> 0 repeats node 1
    g.add(1, 0, WW)
    g.add(2, 3, PROCESS)  # the simple cycle: 0 -> 1 -> 2 -> 3 -> 4 -> 0
    g.add(3, 4, WW)
    g.add(4, 0, WW)
    comp = set(range(5))
    c = search(g, comp, spec("G1c-process", PROCESS), Budget(10**6, math.inf))
    assert c is not None and c[0] == (0, 1, 2, 3, 4)
    assert "G1c-process" in brute(g, comp, PROCESS)


def test_the_linear_pass_decides_all_but_three_models() -> None:
    """docs/checkers.md: the forbidden cycles of every model but three are a union of the linear
    pass's classes; those three forbid G-single without G-nonadjacent."""
    from chaos.checkers.elle.consistency import MODELS

    classes = [("G0",), ("G0", "G1c"), ("G0", "G1c", "G-single", "G-nonadjacent"),
               ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")]  # fmt: skip
    partial = {}
    for name, cm in MODELS.items():
        types = types_for(cm.order_edges)
        forbidden = {t for t in types if cm.forbidden(t)}
        covered = set()
        levels = [s for s in SUFFIXES if any(t.endswith(s) for t in types)]
        for i in range(len(levels)):
            for bases in classes:
                c = {b + s for b in bases for s in SUFFIXES[: i + 1]}
                if c <= forbidden:
                    covered |= c
        if covered != forbidden:
            partial[name] = sorted(forbidden - covered)
    assert len(MODELS) == 25
    assert partial == {m: ["G-single"] for m in
                       ("consistent-view", "forward-consistent-view", "update-serializable")}  # fmt: skip
