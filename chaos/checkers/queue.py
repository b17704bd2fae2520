"""total-queue: what goes in must come out (Jepsen's ``checker/total-queue``).

Over the whole history, as multisets of values:

* *attempts* — every ``enqueue`` invoked (ok, fail, info or never completed);
* *enqueues* — every ``enqueue`` that completed ``ok``;
* *dequeues* — every ``dequeue`` that completed ``ok`` with a value, plus each element of an ok
  ``drain`` (a dequeue of nil means the queue was empty and is not counted).

Then ``lost = enqueues - dequeues`` (acknowledged, never came out); ``unexpected`` = dequeued
values that were never attempted at all; ``duplicated`` = extra copies of attempted values
(dequeued more often than attempted); ``recovered`` = dequeued values whose enqueue was
indeterminate (``info``) — an ``info`` enqueue may or may not have happened, so seeing it come out
is fine and not seeing it is fine too.

Valid iff nothing is lost and nothing is unexpected. Duplicates are reported but, as in Jepsen,
do not invalidate: at-least-once queues (JetStream, SQS) redeliver by design. Pass
``allow_duplicates=False`` for an exactly-once queue. The history must drain the queue at the
end, or every element still inside counts as lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from chaos.checkers._rows import OpRows, rows_of
from chaos.checkers.models import freeze, thaw
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op

__all__ = ["total_queue", "total_queue_rows"]

SHOWN = 50  # anomalies listed per kind; the counts are complete


def _listing(ms: dict[Any, int], kind: str) -> list[dict[str, Any]]:
    items = sorted(ms.items(), key=lambda kv: repr(kv[0]))[:SHOWN]
    return [{"type": kind, "value": thaw(v), "count": c} for v, c in items]


def _multisets(
    attempts: list[Hashable], enqueues: list[Hashable], dequeues: list[Hashable]
) -> tuple[int, dict[Hashable, int], dict[Hashable, int], dict[Hashable, int], dict[Hashable, int]]:
    """ok count, lost, unexpected, duplicated, recovered — Jepsen's multiset algebra."""
    d = Counter(dequeues)
    dk = d.keys()
    a_set = set(attempts)
    e_set = set(enqueues)
    if len(a_set) == len(attempts) and len(e_set) == len(enqueues):
        # The usual case, every value enqueued once: set operations on the dequeued values'
        # keys do the multiset algebra, in C.
        unexpected = {x: d[x] for x in dk - a_set}
        duplicated = {x: c - 1 for x, c in d.items() if c > 1 and x in a_set}
        ok = a_set & dk
        lost = dict.fromkeys(e_set - dk, 1)
        recovered = dict.fromkeys(ok - e_set, 1)
        return len(ok), lost, unexpected, duplicated, recovered
    a = Counter(attempts)
    e = Counter(enqueues)
    ok_ms = d & a
    unexpected_ms = Counter({x: c for x, c in d.items() if x not in a})
    return (
        ok_ms.total(),
        dict(e - d),
        dict(unexpected_ms),
        dict(d - a - unexpected_ms),
        dict(ok_ms - e),
    )


def total_queue_rows(rows: OpRows, *, allow_duplicates: bool = True) -> CheckResult:
    enq = rows.get("enqueue")
    attempts = [r[3] for r in enq if r[2] == "invoke"]
    enqueues = [r[3] for r in enq if r[2] == "ok"]
    dequeues = [r[3] for r in rows.get("dequeue") if r[2] == "ok" and r[3] is not None]
    for r in rows.get("drain"):
        if r[2] == "ok" and isinstance(r[3], (list, tuple)):
            dequeues.extend(x for x in r[3] if x is not None)
    try:
        ok, lost, unexpected, duplicated, recovered = _multisets(attempts, enqueues, dequeues)
    except TypeError:  # lists or maps as values: compare them frozen
        attempts, enqueues, dequeues = (
            [freeze(v) for v in xs] for xs in (attempts, enqueues, dequeues)
        )
        ok, lost, unexpected, duplicated, recovered = _multisets(attempts, enqueues, dequeues)
    n_lost = sum(lost.values())
    n_unexpected = sum(unexpected.values())
    n_duplicated = sum(duplicated.values())
    n_recovered = sum(recovered.values())
    stats = {
        "attempt_count": len(attempts),
        "acknowledged_count": len(enqueues),
        "ok_count": ok,
        "lost_count": n_lost,
        "unexpected_count": n_unexpected,
        "duplicated_count": n_duplicated,
        "recovered_count": n_recovered,
    }
    anomalies = (
        _listing(lost, "lost")
        + _listing(unexpected, "unexpected")
        + _listing(duplicated, "duplicated")
        + _listing(recovered, "recovered")
    )
    problems = []
    if n_lost:
        problems.append(f"{n_lost} acknowledged enqueue(s) never dequeued")
    if n_unexpected:
        problems.append(f"{n_unexpected} dequeue(s) of values never enqueued")
    if n_duplicated and not allow_duplicates:
        problems.append(f"{n_duplicated} duplicate dequeue(s)")
    if problems:
        verdict = Verdict.INVALID
        summary = "; ".join(problems)
    elif not attempts:
        verdict = Verdict.UNKNOWN
        summary = "no enqueue was attempted"
    else:
        verdict = Verdict.VALID
        summary = (
            f"all {len(enqueues)} acknowledged enqueues came out ({ok} dequeued, "
            f"{n_recovered} recovered, {n_duplicated} duplicated)"
        )
    return CheckResult(
        checker="total-queue", verdict=verdict, summary=summary, anomalies=anomalies, stats=stats
    )


def total_queue(history: Sequence[Op], *, allow_duplicates: bool = True) -> CheckResult:
    return total_queue_rows(rows_of(history), allow_duplicates=allow_duplicates)
