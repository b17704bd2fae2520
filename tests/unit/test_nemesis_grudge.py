"""Partition shapes: the grudges networkx computes keep the promises their names make."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from chaos.nemesis import grudge as gr

N3 = ["n1", "n2", "n3"]
N5 = ["n1", "n2", "n3", "n4", "n5"]
N7 = [f"n{i}" for i in range(1, 8)]


def hears(nodes: list[str], g: gr.Grudge, n: str) -> set[str]:
    return {m for m in nodes if m != n and m not in g.get(n, [])}


def symmetric(g: gr.Grudge) -> bool:
    return all(n in g.get(p, []) for n, peers in g.items() for p in peers)


@pytest.mark.parametrize("nodes", [N3, N5, N7])
def test_one_isolates_exactly_one_node(nodes: list[str]) -> None:
    g = gr.shape_grudge("one", nodes, random.Random(4))
    comps = gr.components(nodes, g)
    assert sorted(len(c) for c in comps) == [1, len(nodes) - 1]
    assert symmetric(g)


@pytest.mark.parametrize("nodes", [N3, N5, N7])
def test_halves_is_a_clean_split_smaller_half_first(nodes: list[str]) -> None:
    g = gr.shape_grudge("halves", nodes, random.Random(4))
    comps = sorted(gr.components(nodes, g), key=len)
    assert [len(c) for c in comps] == [len(nodes) // 2, len(nodes) - len(nodes) // 2]
    assert symmetric(g)


@pytest.mark.parametrize(("nodes", "cut"), [(N3, 1), (N5, 1), (N7, 2)])
def test_minority_third_cuts_up_to_a_third(nodes: list[str], cut: int) -> None:
    g = gr.shape_grudge("minority-third", nodes, random.Random(9))
    assert sorted(len(c) for c in gr.components(nodes, g))[0] == cut


@pytest.mark.parametrize("nodes", [N5, N7])
def test_majorities_ring_every_node_sees_a_majority_none_the_same(nodes: list[str]) -> None:
    g = gr.shape_grudge("majorities-ring", nodes, random.Random(2))
    views = [frozenset(hears(nodes, g, n) | {n}) for n in nodes]
    assert all(len(v) >= gr.majority(len(nodes)) for v in views)
    assert len(set(views)) == len(nodes), "no two nodes see the same majority"


def test_majorities_ring_on_three_nodes_is_asymmetric_and_cuts_every_link() -> None:
    g = gr.shape_grudge("majorities-ring", N3, random.Random(2))
    assert all(len(hears(N3, g, n)) == 1 for n in N3)
    assert not symmetric(g)
    # a TCP connection needs both directions: every pair loses one
    assert gr.blocked_links(g) == [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]


@pytest.mark.parametrize("nodes", [N3, N5, N7])
def test_bridge_keeps_one_node_talking_to_both_halves(nodes: list[str]) -> None:
    g = gr.shape_grudge("bridge", nodes, random.Random(5))
    bridges = [n for n in nodes if n not in g and all(n not in p for p in g.values())]
    assert len(bridges) == 1
    up = nx.Graph()
    up.add_nodes_from(nodes)
    up.add_edges_from(
        (a, b)
        for i, a in enumerate(nodes)
        for b in nodes[i + 1 :]
        if (a, b) not in gr.blocked_links(g)
    )
    assert nx.is_connected(up)
    up.remove_node(bridges[0])
    assert nx.number_connected_components(up) == 2, "without the bridge the halves are apart"


def test_primaries_isolates_each_primary() -> None:
    g = gr.shape_grudge("primaries", N5, random.Random(1), primaries=["n4"])
    assert ["n4"] in gr.components(N5, g)
    with pytest.raises(gr.GrudgeError, match="no primary"):
        gr.shape_grudge("primaries", N5, random.Random(1), primaries=[])


def test_shapes_are_a_function_of_the_seed() -> None:
    for shape in gr.RANDOM_SHAPES:
        a = gr.shape_grudge(shape, N5, random.Random(42))
        assert a == gr.shape_grudge(shape, N5, random.Random(42))
    drawn = {repr(gr.shape_grudge("halves", N5, random.Random(s))) for s in range(30)}
    assert len(drawn) > 3, "the seed decides who lands where"


def test_custom_grudges_as_mapping_or_components() -> None:
    assert gr.custom_grudge(N3, {"n1": ["n2", "n3"]}) == {"n1": ["n2", "n3"]}
    assert gr.custom_grudge(N3, [["n1"], ["n2", "n3"]]) == {
        "n1": ["n2", "n3"],
        "n2": ["n1"],
        "n3": ["n1"],
    }
    for bad, msg in [
        ({"n9": ["n1"]}, "unknown node"),
        ({"n1": ["n1"]}, "cannot hate"),
        ({"n1": []}, "cuts nothing"),
        ([["n1", "n2", "n3"]], "cut nothing"),
        ([["n1"], ["n1", "n2"]], "two components"),
        ("n1", "a grudge is"),
    ]:
        with pytest.raises(gr.GrudgeError, match=msg):
            gr.custom_grudge(N3, bad)


def test_unknown_shape_names_the_shapes() -> None:
    with pytest.raises(gr.GrudgeError, match="majorities-ring"):
        gr.shape_grudge("triangle", N3, random.Random(1))
