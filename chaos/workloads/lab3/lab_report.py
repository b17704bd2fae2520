"""The lab report JSON the course asks for: per scenario, stream count, redeliveries, counter, results.

It also carries an excerpt of one task's events (publish/republish → delivery → commit →
redelivery → suppression → ACK), choosing the task whose chain shows the most of the protocol.
"""

from __future__ import annotations

from typing import Any

from chaos.checkers.verdict import CheckResult, combine
from chaos.histories.store import StoredRun
from chaos.workloads.lab3.checkers.chains import chain
from chaos.workloads.lab3.model import model_of

INTERESTING = ("publish-retry", "redelivery", "suppressed", "crash", "publish-ack-lost")


def excerpt(run: StoredRun) -> dict[str, Any] | None:
    m = model_of(run)
    faults, crashes = m.faults, m.crashes
    best: tuple[int, str] | None = None
    for task_id in sorted({e.task_id for e in run.events if e.task_id}):
        steps = chain(run.events, task_id, faults, crashes)
        score = sum(1 for s in steps if s["step"] in INTERESTING) * 10 + len(steps)
        if best is None or score > best[0]:
            best = (score, task_id)
    if best is None:
        return None
    return {"task_id": best[1], "events": chain(run.events, best[1], faults, crashes)}


def scenario_report(run: StoredRun, results: list[CheckResult]) -> dict[str, Any]:
    spec = run.spec
    final = run.final or {}
    stats = next((r.stats for r in results if r.checker == "delivery-stats"), {})
    scenario = spec.get("scenario") or (",".join(spec.get("nemesis") or []) or "no-fault")
    return {
        "lab": "lab3",
        "solution": spec.get("solution"),
        "seed": spec.get("seed"),
        "scenario": scenario,
        "stream_count": (final.get("stream") or {}).get("messages"),
        "redelivery_count": stats.get("redeliveries"),
        "consumer_num_redelivered": (final.get("consumer") or {}).get("num_redelivered"),
        "publish_retries": stats.get("publish_retries"),
        "suppressed": stats.get("suppressed"),
        "counter": final.get("counter"),
        "results": len(final.get("results") or {}),
        "tasks_completed": sum(1 for s in (final.get("tasks") or {}).values() if s == "completed"),
        "verdict": combine(results).value,
        "checkers": {r.checker: r.verdict.value for r in results},
        "excerpt": excerpt(run),
    }


def combined_report(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The course's JSON: the scenarios side by side, with the standard set's expectation."""
    verdicts = [r.get("verdict") for r in reports.values()]
    overall = (
        "invalid" if "invalid" in verdicts else "unknown" if "unknown" in verdicts else "valid"
    )
    return {
        "lab": "lab3",
        "standard_set": {"amounts": [2, 3, 5], "expected_counter": 10, "expected_results": 3},
        "scenarios": reports,
        "verdict": overall,
    }
