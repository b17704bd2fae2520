"""A register's version order, per key, from its sources: the pairs each source gives (see
:mod:`.version_sources`), tried in the order of :data:`~.options.SOURCES`, as Elle's
``version-graphs`` tries them.

The initial ``nil`` precedes every version (the source every check uses). A source whose pairs
would close a cycle in a key's versions is left out *for that key* — Elle leaves it out for every
key; here the other keys keep what it says — and the cycle is reported as ``cyclic-versions``,
naming the sources that made it: a version order with a cycle is no order at all, so the
transactions' ``ww`` and ``rw`` edges come from the sources that agree.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from chaos.checkers.elle.inference import Findings, show
from chaos.checkers.elle.version_sources import Pairs

__all__ = ["WORDS", "VersionGraph", "combine"]

# why a pair x < y holds, by source, in words ({x} and {y} the versions, {b} the later writer)
WORDS = {
    "initial-state": "every written version follows the initial nil",
    "transaction-order": "the database's commit order puts {x} first",
    "writes-follow-reads": "{b} read {x} before writing",
    "sequential-keys": "sequential keys: one process saw or wrote {x} before {y}",
    "linearizable-keys": "linearizable keys: a transaction that saw or wrote {x} completed "
    "before one that saw or wrote {y} was invoked",
}


@dataclass
class VersionGraph:
    """Each key's known version pairs: ``after[k][x]`` the versions known to follow ``x``
    directly, ``source[(k, x, y)]`` the source that said so first; ``used`` counts the pairs
    each source gave, ``left_out`` the keys where one was left out for a cycle."""

    after: dict[Any, dict[Any, set[Any]]] = field(default_factory=dict)
    source: dict[tuple[Any, Any, Any], str] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)


def combine(sources: Iterable[tuple[str, Pairs]], found: Findings) -> VersionGraph:
    """Add each source's pairs, key by key, unless they close a cycle (then report it)."""
    g = VersionGraph()
    agreed: dict[Any, list[str]] = {}  # key -> the sources accepted there so far
    for name, pairs in sources:
        g.used.setdefault(name, 0)
        for k, ps in pairs.items():
            adj = g.after.setdefault(k, {})
            new = [(x, y) for x, y in ps if y not in adj.get(x, ())]
            if not new:
                continue
            for x, y in new:
                adj.setdefault(x, set()).add(y)
            if _cyclic(adj):
                _report(found, k, adj, [*agreed.get(k, []), name])
                for x, y in new:
                    adj[x].discard(y)
                g.left_out[name] = g.left_out.get(name, 0) + 1
                continue
            agreed.setdefault(k, []).append(name)
            g.used[name] += len(new)
            for x, y in new:
                g.source[(k, x, y)] = name
    return g


def _cyclic(adj: Mapping[Any, set[Any]]) -> bool:
    """Whether the pairs, with the initial nil before every version, hold a cycle: an edge into
    nil closes one; otherwise a depth-first search over the rest (iterative: keys can have
    hundreds of thousands of versions)."""
    for x, ys in adj.items():
        if x is not None and None in ys:
            return True
    state: dict[Any, int] = {}  # 1 on the stack, 2 done
    for root in adj:
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[Any, Iterator[Any]]] = [(root, iter(adj.get(root, ())))]
        while stack:
            node, it = stack[-1]
            for y in it:
                s = state.get(y)
                if s == 1:
                    return True
                if s is None:
                    state[y] = 1
                    stack.append((y, iter(adj.get(y, ()))))
                    break
            else:
                state[node] = 2
                stack.pop()
    return False


class _Nil:
    """The initial nil as a graph node (networkx takes no None)."""

    def __repr__(self) -> str:
        return "nil"


_NIL = _Nil()


def _report(found: Findings, k: Hashable, adj: Mapping[Any, set[Any]], sources: list[str]) -> None:
    """Each strongly connected set of versions (Elle's ``:scc``), one cycle of it in words."""

    def node(v: Hashable) -> Hashable:
        return _NIL if v is None else v

    g = nx.DiGraph((node(x), node(y)) for x, ys in adj.items() for y in ys)
    if _NIL in g:  # the initial nil precedes every version
        g.add_edges_from((_NIL, v) for v in list(g.nodes) if v is not _NIL)
    for scc in nx.strongly_connected_components(g):
        if len(scc) < 2:
            continue
        cyc = nx.find_cycle(g.subgraph(scc))
        order = " < ".join(show(x) for x, _ in cyc) + f" < {show(cyc[0][0])}"
        versions = [None if v is _NIL else v for v in scc]
        found(
            "cyclic-versions",
            {
                "key": k,
                "versions": sorted(versions, key=lambda v: (v is not None, repr(v))),
                "sources": ["initial-state", *sources],
                "explanation": f"key {show(k)}: {' + '.join(['initial-state', *sources])} "
                f"order its versions in a cycle: {order}",
            },
        )
