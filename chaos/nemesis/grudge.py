"""Partition shapes as grudges, computed on the cluster's node graph with networkx.

A *grudge* maps each node to the nodes it must not hear from (Jepsen's word). The shape builds the
graph of links that stay up; the grudge is that graph's complement. Working on a graph keeps every
shape honest about what it promises: ``bridge`` must stay connected through exactly one node,
``majorities-ring`` must give every node a majority, a clean split must have no edge across.

Pure: a shape depends on the node names, the random stream it is given (for the shuffle) and, for
``primaries``, the list of primaries; nothing here touches a cluster.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

import networkx as nx

Grudge = dict[str, list[str]]

SHAPES = ("one", "halves", "majorities-ring", "minority-third", "bridge", "primaries")
# the shapes a random schedule draws from: ``primaries`` depends on who leads at the moment, so a
# schedule that drew it would not replay from its seed alone
RANDOM_SHAPES = ("one", "halves", "majorities-ring", "minority-third", "bridge")


class GrudgeError(ValueError):
    """A shape or a custom grudge that cannot apply to these nodes."""


def majority(n: int) -> int:
    return n // 2 + 1


def minority_third(n: int) -> int:
    """Jepsen's "up to, but not including, a third" of ``n`` nodes, at least one so that it cuts."""
    return max(1, (n - 1) // 3)


def from_graph(g: nx.Graph | nx.DiGraph) -> Grudge:
    """The grudge of a graph of links that stay up: each node hates every node it has no edge from.

    In a directed graph an edge ``a -> b`` means b hears a; in an undirected one both ways.
    """
    nodes = sorted(g.nodes)
    out: Grudge = {}
    for n in nodes:
        hears = set(g.predecessors(n)) if g.is_directed() else set(g.neighbors(n))
        hated = [m for m in nodes if m != n and m not in hears]
        if hated:
            out[n] = hated
    return out


def components_graph(nodes: Sequence[str], components: Iterable[Iterable[str]]) -> nx.Graph:
    """Links inside each component only (a clean cut between components)."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    seen: set[str] = set()
    for comp in components:
        members = list(comp)
        unknown = [m for m in members if m not in set(nodes)]
        if unknown:
            raise GrudgeError(f"unknown node(s) {', '.join(unknown)}; nodes are {', '.join(nodes)}")
        twice = seen & set(members)
        if twice:
            raise GrudgeError(f"node(s) {', '.join(sorted(twice))} in two components")
        seen |= set(members)
        g.add_edges_from(nx.complete_graph(members).edges)
    # nodes named in no component form one more component together (Jepsen's "the rest")
    rest = [n for n in nodes if n not in seen]
    g.add_edges_from(nx.complete_graph(rest).edges)
    return g


def complete_grudge(nodes: Sequence[str], components: Iterable[Iterable[str]]) -> Grudge:
    return from_graph(components_graph(nodes, components))


def bridge_graph(ordered: Sequence[str]) -> nx.Graph:
    """Two halves with one node (the first of the second half) linked to everyone."""
    if len(ordered) < 3:
        raise GrudgeError("bridge needs at least 3 nodes")
    left, right = bisect(ordered)
    g = components_graph(ordered, [left, right])
    bridge = right[0]
    g.add_edges_from((bridge, n) for n in ordered if n != bridge)
    return g


def ring_graph(ordered: Sequence[str]) -> nx.DiGraph:
    """Overlapping majorities around a ring: node i hears the majority window centred on it.

    Jepsen's ``majorities-ring``: windows of ``majority(n)`` consecutive nodes of the ring, each
    given to its middle node. On 5 nodes every node hears its two neighbours; no two nodes hear the
    same majority. On 3 nodes each node hears one neighbour, so the grudge is asymmetric.
    """
    n = len(ordered)
    m = majority(n)
    g = nx.DiGraph()
    g.add_nodes_from(ordered)
    for i in range(n):
        window = [ordered[(i + k) % n] for k in range(m)]
        centre = window[m // 2]
        g.add_edges_from((w, centre) for w in window if w != centre)
    return g


def bisect(ordered: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split in two, the smaller half first (Jepsen's ``bisect``)."""
    k = len(ordered) // 2
    return list(ordered[:k]), list(ordered[k:])


def shape_grudge(
    shape: str,
    nodes: Sequence[str],
    rng: random.Random,
    *,
    primaries: Sequence[str] = (),
) -> Grudge:
    """The grudge of a named shape on ``nodes``; ``rng`` shuffles which nodes land where."""
    nodes = sorted(nodes)
    if len(nodes) < 2:
        raise GrudgeError("a partition needs at least 2 nodes")
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    if shape == "one":
        return complete_grudge(nodes, [[shuffled[0]]])
    if shape == "halves":
        return complete_grudge(nodes, bisect(shuffled))
    if shape == "minority-third":
        return complete_grudge(nodes, [shuffled[: minority_third(len(nodes))]])
    if shape == "majorities-ring":
        return from_graph(ring_graph(shuffled))
    if shape == "bridge":
        return from_graph(bridge_graph(shuffled))
    if shape == "primaries":
        prim = [p for p in nodes if p in set(primaries)]
        if not prim:
            raise GrudgeError("primaries: no primary is known right now (no leader?)")
        # each primary alone, the others together: a leader cut off from every follower
        return complete_grudge(nodes, [[p] for p in prim])
    raise GrudgeError(f"unknown partition shape {shape!r}; shapes: {', '.join(SHAPES)}")


def custom_grudge(nodes: Sequence[str], spec: object) -> Grudge:
    """A grudge given in a spec: ``{"n1": ["n2"], ...}`` (who hates whom) or a list of components."""
    nodes = sorted(nodes)
    if isinstance(spec, Mapping):
        out: Grudge = {}
        for k, v in spec.items():
            if k not in nodes:
                raise GrudgeError(f"unknown node {k!r}; nodes are {', '.join(nodes)}")
            peers = [v] if isinstance(v, str) else list(v or [])
            bad = [p for p in peers if p not in nodes or p == k]
            if bad:
                raise GrudgeError(f"{k}: cannot hate {', '.join(map(str, bad))}")
            if peers:
                out[str(k)] = sorted(str(p) for p in peers)
        if not out:
            raise GrudgeError("the grudge cuts nothing")
        return dict(sorted(out.items()))
    if isinstance(spec, list | tuple) and all(isinstance(c, list | tuple) for c in spec):
        g = complete_grudge(nodes, [[str(m) for m in c] for c in spec])
        if not g:
            raise GrudgeError("the components cut nothing")
        return g
    raise GrudgeError(
        "a grudge is a mapping node -> nodes it drops, or a list of components (lists of nodes)"
    )


def isolated_grudge(nodes: Sequence[str], isolated: Iterable[str]) -> Grudge:
    """Cut ``isolated`` (as one component) from the rest."""
    return complete_grudge(sorted(nodes), [sorted(set(isolated))])


def cut_pairs(grudge: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """(receiver, sender) pairs whose packets are dropped, sorted."""
    return sorted((n, p) for n, peers in grudge.items() for p in peers)


def blocked_links(grudge: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """Unordered node pairs that cannot hold a TCP connection: one direction dropped is enough."""
    return sorted({tuple(sorted((n, p))) for n, p in cut_pairs(grudge)})  # type: ignore[misc]


def components(nodes: Sequence[str], grudge: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Groups of nodes that can still talk both ways (for a symmetric grudge: its components)."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    blocked = set(blocked_links(grudge))
    for i, a in enumerate(sorted(nodes)):
        for b in sorted(nodes)[i + 1 :]:
            if (a, b) not in blocked:
                g.add_edge(a, b)
    return sorted(sorted(c) for c in nx.connected_components(g))
