"""counter: every read lies within the bounds the adds allow (Jepsen's ``checker/counter``).

Walking the history in order, with the counter starting at 0:

* *lower* grows when an ``add n`` completes ok (it certainly happened by then);
* *upper* grows when an ``add n`` is invoked, unless it is going to fail (an ``info`` or
  never-completed add may have happened, so it counts);
* a read that completes ok must return a value in ``[lower at its invoke, upper at its
  completion]``.

Negative adds are allowed (Jepsen asserts they are not): they move the bounds the other way round,
lower at the invoke and upper at the completion. ``increment``/``inc`` are adds of 1 when their
value is nil.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers._rows import OpRows, Row, completions, ordered, rows_of
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op

__all__ = ["counter", "counter_rows"]

SHOWN = 50
_ADDS = ("add", "increment", "inc")


def _amount(v: object) -> int | float | None:
    if v is None:
        return 1
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    return None


def counter_rows(rows: OpRows, init: float = 0) -> CheckResult:
    """``init`` is the counter's value before the history (``chaos check --init``)."""
    reads, bad_values = _bounded_reads(ordered(rows, (*_ADDS, "read")), init)
    errors = [
        r
        for r in reads
        if not (isinstance(r[1], (int, float)) and not isinstance(r[1], bool))
        or not r[0] <= r[1] <= r[2]
    ]
    stats = {"read_count": len(reads), "error_count": len(errors)}
    anomalies: list[dict[str, Any]] = [
        {"type": "out-of-bounds", "lower": lo, "value": val, "upper": hi, "position": pos}
        for lo, val, hi, pos in errors[:SHOWN]
    ]
    if bad_values:
        anomalies.append({"type": "bad-add", "positions": bad_values[:SHOWN]})
        return CheckResult(
            checker="counter",
            verdict=Verdict.UNKNOWN,
            summary=f"{len(bad_values)} add op(s) whose value is not a number",
            anomalies=anomalies,
            stats=stats,
        )
    if errors:
        lo, val, hi, _ = errors[0]
        return CheckResult(
            checker="counter",
            verdict=Verdict.INVALID,
            summary=f"{len(errors)} read(s) out of bounds, first: read {val!r} not in [{lo}, {hi}]",
            anomalies=anomalies,
            stats=stats,
        )
    if not reads:
        return CheckResult(
            checker="counter",
            verdict=Verdict.UNKNOWN,
            summary="no read completed, nothing to check",
            stats=stats,
        )
    return CheckResult(
        checker="counter",
        verdict=Verdict.VALID,
        summary=f"all {len(reads)} read(s) within bounds",
        stats=stats,
    )


def _bounded_reads(
    ops: list[tuple[str, Row]], init: float
) -> tuple[list[tuple[float, Any, float, int]], list[int]]:
    """Each completed read as (the lowest the counter could be at its invoke, the value read, the
    highest it could be at its completion, its position), and the positions of adds whose
    amount is not a number."""
    comp = completions(ops)
    lower: float = init
    upper: float = init
    pending: dict[int | str, float] = {}  # process -> lower bound at its read's invoke
    adding: dict[int | str, float] = {}  # process -> amount of its outstanding add
    reads: list[tuple[float, Any, float, int]] = []
    bad_values: list[int] = []
    for i, (f, (pos, p, t, v, _e)) in enumerate(ops):
        if f in _ADDS:
            if t == "invoke":
                n = _amount(v)
                if n is None:
                    bad_values.append(pos)
                    continue
                j = comp[i]
                if j >= 0 and ops[j][1][2] == "fail":
                    continue
                adding[p] = n
                if n >= 0:
                    upper += n
                else:
                    lower += n
            else:
                # The invoke's amount: a completion may echo it, or carry nothing.
                n = adding.pop(p, None)
                if t == "ok" and n is not None:
                    if n >= 0:
                        lower += n
                    else:
                        upper += n
        elif f == "read":
            if t == "invoke":
                pending[p] = lower
            elif p in pending:
                at_invoke = pending.pop(p)
                if t == "ok":
                    reads.append((at_invoke, v, upper, pos))
    return reads, bad_values


def counter(history: Sequence[Op], init: float = 0) -> CheckResult:
    return counter_rows(rows_of(history), init)
