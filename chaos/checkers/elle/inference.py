"""What a data model's inference hands the cycle search: the graph, the anomalies found without
a cycle, and how to put one edge of the graph into words.

Each data model (:mod:`.list_append`, :mod:`.rw_register`) implements :class:`Inference`. The
contract: every edge in ``graph`` is proven by observed data (a read, a version order the reads
reveal, the process or real-time order); an ``info`` transaction appears in a data edge only
where a read proves its write took effect; a ``fail`` transaction appears in none.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaos.checkers.elle.graph import PROCESS, REALTIME, DepGraph
from chaos.checkers.elle.txns import Txn

__all__ = ["Explainer", "Findings", "Inference", "order_text", "show", "unwritten_read"]

MAX_CASES = 20  # anomalies of one kind kept as evidence (all are counted)


class Explainer(Protocol):
    """Puts one edge into words, naming its transactions ``a`` and ``b`` as given."""

    def explain(self, u: Txn, v: Txn, kind: int, a: str, b: str) -> dict[str, Any]:
        """``{"key": .., "value": .., "text": "b read a's append of 3 to key 5"}`` for an edge
        ``u -> v`` of ``kind`` (one bit); must not raise for an edge the inference added."""
        ...


@dataclass
class Inference:
    graph: DepGraph
    explainer: Explainer
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    # why edges the data proves were left out (a bound hit): the history cannot be called valid
    incomplete: list[str] = field(default_factory=list)


class Findings:
    """The anomalies a data model finds without a cycle: every one counted, the first
    :data:`MAX_CASES` of each kind kept as evidence. Call it with ``(kind, case)``."""

    def __init__(self) -> None:
        self._cases: dict[str, list[dict[str, Any]]] = {}
        self._counts: dict[str, int] = {}

    def __call__(self, kind: str, case: dict[str, Any]) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        cases = self._cases.setdefault(kind, [])
        if len(cases) < MAX_CASES:
            cases.append({"type": kind, **case})

    def listed(self) -> list[dict[str, Any]]:
        """The kept cases, each with the count of its kind."""
        return [{**c, "count": self._counts[c["type"]]} for cs in self._cases.values() for c in cs]


def show(v: object) -> str:
    """A value as a Jepsen user writes it: nil, [1 2 3], :k, "s"."""
    if v is None:
        return "nil"
    if isinstance(v, tuple | list):
        return "[" + " ".join(show(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def unwritten_read(
    found: Findings,
    reader: Txn,
    failed: Txn | None,
    key: Hashable,
    value: object,
    *,
    read: str,
    done: tuple[str, str],
) -> None:
    """A read of a value no committed transaction put there: ``G1a`` when ``failed`` (the aborted
    transaction that did) is known, else ``garbage-read``. ``read`` words the read ("read key 5 =
    3"); ``done`` the data model's verb as ``(participle, past)``: ("written", "wrote")."""
    if failed is not None:
        found(
            "G1a",
            {
                "txns": [failed.index, reader.index],
                "key": key,
                "value": value,
                "explanation": f"op {reader.index} {read}, {done[0]} by op {failed.index}, "
                "which failed (aborted read)",
            },
        )
    else:
        found(
            "garbage-read",
            {
                "txns": [reader.index],
                "key": key,
                "value": value,
                "explanation": f"op {reader.index} {read}, which no transaction {done[1]}",
            },
        )


def order_text(u: Txn, v: Txn, kind: int, a: str, b: str) -> dict[str, Any] | None:
    """The words for a process or real-time edge (the same in every data model)."""
    if kind == PROCESS:
        return {"text": f"process {u.process} ran {a} then {b} (process)"}
    if kind == REALTIME:
        return {
            "text": f"{a} completed (op {u.index}) before {b} was invoked "
            f"(op {v.invoke_index}) (realtime)"
        }
    return None
