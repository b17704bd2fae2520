"""unique-ids: an id generator never hands out the same id twice (Jepsen's ``checker/unique-ids``).

Ops are ``generate`` (any ``f`` can be chosen); the ok completions' values are the ids. Valid iff
no id appears in two ok completions. ``info`` generates are counted as attempts only: an id nobody
saw cannot be a duplicate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from chaos.checkers._rows import OpRows, rows_of
from chaos.checkers.models import freeze, thaw
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op

__all__ = ["unique_ids", "unique_ids_rows"]

SHOWN = 48


def unique_ids_rows(rows: OpRows, *, f: str = "generate") -> CheckResult:
    lst = rows.get(f)
    attempted = sum(1 for r in lst if r[2] == "invoke")
    ids = [r[3] for r in lst if r[2] == "ok"]
    try:
        counts = Counter(ids)
    except TypeError:
        counts = Counter(freeze(v) for v in ids)
    dups = {v: c for v, c in counts.items() if c > 1}
    stats: dict[str, Any] = {
        "attempted_count": attempted,
        "acknowledged_count": len(ids),
        "duplicated_count": len(dups),
    }
    try:
        stats["range"] = [min(counts), max(counts)] if counts else None
    except TypeError:
        stats["range"] = None  # ids that do not compare with each other
    worst = sorted(dups.items(), key=lambda kv: (-kv[1], repr(kv[0])))[:SHOWN]
    anomalies = [{"type": "duplicated", "id": thaw(v), "count": c} for v, c in worst]
    if dups:
        verdict = Verdict.INVALID
        summary = f"{len(dups)} id(s) handed out more than once (worst: {worst[0][1]} times)"
    elif not ids:
        verdict, summary = Verdict.UNKNOWN, f"no {f} op completed ok"
    else:
        verdict, summary = Verdict.VALID, f"all {len(ids)} ids distinct"
    return CheckResult(
        checker="unique-ids", verdict=verdict, summary=summary, anomalies=anomalies, stats=stats
    )


def unique_ids(history: Sequence[Op], *, f: str = "generate") -> CheckResult:
    return unique_ids_rows(rows_of(history), f=f)
