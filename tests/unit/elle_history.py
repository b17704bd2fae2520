"""Hand-made transactional histories for the Elle checker's tests.

A transaction is written as ``("ok", process, [("append", "x", 1), ("r", "y", [1])])``: the
completion's micro-ops (the invocation is derived: reads invoked as nil). :func:`concurrent`
invokes every transaction before any completes (no real-time order between them);
:func:`serial` runs them one after another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.elle import RawOp, check_transactions, transactions
from chaos.checkers.verdict import CheckResult

T = tuple[str, Any, list[tuple[str, Any, Any]]]


def _invoke_value(mops: list[tuple[str, Any, Any]]) -> list[list[Any]]:
    return [[f, k, None if f == "r" else v] for f, k, v in mops]


def _ops(events: Sequence[tuple[str, Any, Any]]) -> list[RawOp]:
    return [
        RawOp(pos=i, index=i, process=p, type=t, f="txn", value=v)
        for i, (t, p, v) in enumerate(events)
    ]


def concurrent(*txns: T) -> list[RawOp]:
    ev: list[tuple[str, Any, Any]] = [("invoke", p, _invoke_value(m)) for _, p, m in txns]
    ev += [(t, p, m if t != "info" else _invoke_value(m)) for t, p, m in txns]
    return _ops(ev)


def serial(*txns: T) -> list[RawOp]:
    ev: list[tuple[str, Any, Any]] = []
    for t, p, m in txns:
        ev.append(("invoke", p, _invoke_value(m)))
        ev.append((t, p, m if t != "info" else _invoke_value(m)))
    return _ops(ev)


def then(*parts: list[RawOp]) -> list[RawOp]:
    """Histories one after the other (the later ones start after the earlier ones ended)."""
    out: list[RawOp] = []
    for part in parts:
        for op in part:
            n = len(out)
            out.append(
                RawOp(pos=n, index=n, process=op.process, type=op.type, f=op.f, value=op.value)
            )
    return out


def check(
    ops: list[RawOp], consistency: str = "strict-serializable", model: str = "list-append"
) -> CheckResult:
    txns, _ = transactions(ops)
    return check_transactions(txns, model, consistency, time_limit=30)


def found(r: CheckResult, kind: str) -> list[dict[str, Any]]:
    return [a for a in r.anomalies if a["type"] == kind]


def steps(a: dict[str, Any]) -> list[str]:
    return [s["text"] for s in a["steps"]]
