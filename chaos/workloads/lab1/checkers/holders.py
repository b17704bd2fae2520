"""Two replicas inside the job body at once (``overlapping_holders``): evidence, always valid —
a lease alone is not mutual exclusion, so the fencing token must keep the writes safe."""

from __future__ import annotations

from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.workloads.lab1.checkers.common import Told, valid
from chaos.workloads.lab1.model import Grant, Lab1Run, at, rnd


def _overlap(run: Lab1Run, a: Grant, sa: tuple[float, float], b: Grant,
             sb: tuple[float, float], told: Told) -> None:  # fmt: skip
    lo, hi = max(sa[0], sb[0]), min(sa[1], sb[1])
    if hi <= lo:
        return
    paused = sorted(
        {
            g.node
            for g in (a, b)
            for s in run.stops
            if s.hits(g.node, g.pid) and s.start < hi and (s.end is None or s.end > lo)
        }
    )
    why = f", {' and '.join(paused)} while paused" if paused else ""
    told.add(f"replicas {a.node} (token {a.token}) and {b.node} (token {b.token}) were both "
             f"inside the job from {at(lo)} to {at(hi)}{why}", holders=[a.to_json(), b.to_json()],
             **{"from": rnd(lo), "to": rnd(hi)}, paused=paused)  # fmt: skip


def overlapping_holders(run: Lab1Run) -> CheckResult:
    name = "overlapping-holders"
    spans = [(g, sp) for g in run.grants if (sp := g.job_span(run.end, run.stops)) is not None]
    told = Told()
    for i, (a, sa) in enumerate(spans):
        for b, sb in spans[i + 1 :]:
            if (a.node, a.pid) != (b.node, b.pid):
                _overlap(run, a, sa, b, sb, told)
    stats: dict[str, Any] = {"jobs": len(spans), "overlaps": len(told.anomalies)}
    if not told:
        return valid(name, "No two replicas were inside the job at the same time.", stats)
    first = told.sentences[0]
    more = f" (and {len(told.anomalies) - 1} more overlaps)" if len(told.anomalies) > 1 else ""
    return valid(
        name,
        first[0].upper() + first[1:] + more + ": expected when a holder is stopped past its "
        "lease — a lease alone is not mutual exclusion, so the fencing token must keep the "
        "writes safe.",
        stats,
        anomalies=told.anomalies,
    )
