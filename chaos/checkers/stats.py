"""stats: how many ops of each ``f`` were ok, failed or indeterminate (Jepsen's ``checker/stats``).

Counts completions per ``f`` for client ops, and for the nemesis separately; an invoke that never
completed counts as ``info``. Jepsen calls a history invalid when some ``f`` never succeeded; that
is not a safety violation but a sign that the test did not exercise what it meant to, so here it
is ``unknown``. Nemesis ops (always ``info``) never affect the verdict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from chaos.checkers._rows import OpRows, Row, rows_of
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op

__all__ = ["stats", "stats_rows"]


def _table(groups: dict[str, list[Row]]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for f, lst in sorted(groups.items()):
        c = Counter(map(itemgetter(2), lst))
        ok, fail, info = c["ok"], c["fail"], c["info"]
        # Invokes that never completed are indeterminate (completions echo their invoke's f).
        info += max(0, c["invoke"] - ok - fail - info)
        table[f] = {"count": ok + fail + info, "ok": ok, "fail": fail, "info": info}
    return table


def stats_rows(rows: OpRows) -> CheckResult:
    by_f = _table(rows.by_f)
    nemesis = _table(rows.nemesis)
    total = {k: sum(r[k] for r in by_f.values()) for k in ("count", "ok", "fail", "info")}
    out: dict[str, Any] = {**total, "by_f": by_f, "nemesis": nemesis}
    never_ok = sorted(f for f, r in by_f.items() if r["ok"] == 0)
    if not by_f:
        return CheckResult(
            checker="stats", verdict=Verdict.UNKNOWN, summary="no client ops", stats=out
        )
    parts = ", ".join(f"{f} {r['ok']}/{r['fail']}/{r['info']}" for f, r in by_f.items())
    summary = f"{total['count']} client ops (ok/fail/info: {parts})"
    if never_ok:
        return CheckResult(
            checker="stats",
            verdict=Verdict.UNKNOWN,
            summary=f"{summary}; never ok: {', '.join(never_ok)}",
            anomalies=[{"type": "never-ok", "f": f, **by_f[f]} for f in never_ok],
            stats=out,
        )
    return CheckResult(checker="stats", verdict=Verdict.VALID, summary=summary, stats=out)


def stats(history: Sequence[Op]) -> CheckResult:
    return stats_rows(rows_of(history))
