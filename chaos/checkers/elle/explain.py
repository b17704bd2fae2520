"""A cycle as words and as data: each transaction named T1, T2, ... in cycle order, each edge a
sentence saying which observation orders the two, and the whole as one paragraph.

The anomaly's JSON keeps the cycle as data (``txns``: who each Tn is, its micro-ops as
``[f, key, value]`` lists and as EDN text; ``steps``: from, to, edge kind, key, value, text) so that the report can draw it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.elle.cycles import Cycle
from chaos.checkers.elle.graph import KIND_NAMES
from chaos.checkers.elle.inference import Explainer, show
from chaos.checkers.elle.txns import Txn
from chaos.histories.ops import JSONValue

__all__ = ["cycle_anomaly", "describe_mops", "mops_data"]

_WHAT = {
    "G0": "a write cycle: every edge is a write-write dependency",
    "G1c": "circular information flow: ww and wr dependencies only",
    "G-single": "exactly one anti-dependency (rw): a read that missed a write",
    "G-nonadjacent": "several anti-dependencies (rw), none adjacent",
    "G2-item": "several anti-dependencies (rw), some adjacent",
}


def mops_data(t: Txn) -> list[list[Any]]:
    """The micro-ops as data, ``[f, key, value]`` each; a read's value only when the
    transaction completed ``ok`` (else what it read is unknown: nil)."""
    return [[f, k, None if f == "r" and t.type != "ok" else _plain(v)] for f, k, v in t.mops]


def _plain(v: object) -> JSONValue:
    return [_plain(x) for x in v] if isinstance(v, tuple | list) else v


def describe_mops(t: Txn) -> str:
    parts = []
    for f, k, v in t.mops:
        if f == "r" and t.type != "ok":
            v = None
        parts.append(f"[{f} {show(k)} {show(v)}]")
    return "[" + " ".join(parts) + "]"


def cycle_anomaly(
    cycle: Cycle, txns: Sequence[Txn], explainer: Explainer, forbidden: bool
) -> dict[str, Any]:
    """The anomaly record of one cycle (see the module's docstring)."""
    names = {tid: f"T{i + 1}" for i, tid in enumerate(cycle.nodes)}
    n = len(cycle.nodes)
    steps: list[dict[str, Any]] = []
    for i, (u, kind) in enumerate(zip(cycle.nodes, cycle.steps, strict=True)):
        v = cycle.nodes[(i + 1) % n]
        a, b = names[u], names[v]
        said = explainer.explain(txns[u], txns[v], kind, a, b)
        steps.append(
            {
                "from": a,
                "to": b,
                "type": KIND_NAMES[kind],
                **{k: said[k] for k in ("key", "value") if k in said},
                "text": f"{a} < {b}: {said['text']}",
            }
        )
    who = [
        {
            "name": names[tid],
            "index": txns[tid].index,
            "invoke_index": txns[tid].invoke_index,
            "process": txns[tid].process,
            "type": txns[tid].type,
            "value": mops_data(txns[tid]),
            "text": describe_mops(txns[tid]),
        }
        for tid in cycle.nodes
    ]
    base = cycle.type.removesuffix("-process").removesuffix("-realtime")
    suffix = cycle.type[len(base) :]
    what = _WHAT[base] + (
        {"-process": ", through process order", "-realtime": ", through real-time order"}.get(
            suffix, ""
        )
    )
    legend = "; ".join(
        f"{w['name']} = {txns[t].describe()}" for w, t in zip(who, cycle.nodes, strict=True)
    )
    chain = " < ".join(names[t] for t in cycle.nodes) + f" < {names[cycle.nodes[0]]}"
    text = "; ".join(s["text"] for s in steps)
    return {
        "type": cycle.type,
        "forbidden": forbidden,
        "summary": f"{cycle.type}: {chain} — {what}",
        "explanation": f"{legend}. {text}. A cycle, so no order of the transactions explains "
        f"what they observed.",
        "cycle": [txns[t].index for t in cycle.nodes],
        "txns": who,
        "steps": steps,
        "component_size": cycle.component_size,
    }
