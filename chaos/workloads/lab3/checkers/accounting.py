"""The counter's accounting, from the amounts the orchestrator's own client sent and etcd's record:

- ``counter``       the final counter equals the sum of the accepted tasks' amounts;
- ``exactly-once``  every revision under the lab's prefix interpreted, every completed task
                    applied exactly once, the counter's change the sum of the attributed applies.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.workloads.lab3 import keys, record
from chaos.workloads.lab3.model import Lab3Run
from chaos.workloads.systems import record_values


def counter_checker(run: Lab3Run) -> CheckResult:
    """The final counter equals the sum of the amounts the client had accepted — the amounts as
    the orchestrator's own client sent them, the counter as etcd holds it."""
    name = "counter"
    final = run.final or {}
    counter = final.get("counter")
    if counter is None and "counter_refused" in final:
        value = final["counter_refused"]
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary=f"the final read found the counter as {record_values.describe(value)}: "
            f"{record_values.int_problem(value)} (the lab's counter is a JSON integer)",
            anomalies=[{"kind": "unreadable", "key": keys.COUNTER, "value": value}],
        )
    if counter is None:
        return CheckResult(
            checker=name, verdict=Verdict.UNKNOWN, summary=f"no final counter: {run.no_final()}"
        )
    c = run.creates
    created = run.created if run.created is not None else set(final.get("tasks") or {})
    expected, accepted = record.expected_total(c.amounts, c.ok, c.maybe, created)
    stats = {"counter": counter, "expected": expected, "accepted": len(accepted)}
    incomplete = [t for t in accepted if (final.get("tasks") or {}).get(t) != "completed"]
    if counter == expected:
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary=f"counter {counter} = the amounts of the {len(accepted)} accepted tasks",
            stats=stats,
        )
    if counter > expected:
        why = f"{counter - expected} more than the accepted tasks' amounts: applied more than once"
    elif incomplete:
        why = (
            f"{expected - counter} short: {len(incomplete)} accepted task(s) never completed "
            f"({', '.join(incomplete[:5])})"
        )
    else:
        why = f"{expected - counter} short although every task completed: a lost update"
    return CheckResult(
        checker=name,
        verdict=Verdict.INVALID,
        summary=f"the counter is {counter} but the {len(accepted)} accepted tasks add up to "
        f"{expected}: {why}",
        anomalies=[{"counter": counter, "expected": expected, "accepted": accepted}],
        stats=stats,
    )


def exactly_once(run: Lab3Run) -> CheckResult:
    """Exactly-once accounting from etcd's own record: every revision under the lab's prefix is
    interpreted (a known key with a readable value, a counter change attributed to a task), every
    completed task was applied exactly once, and the counter's change over the run is the sum of
    the attributed applies. A record that is missing, cut or compacted is ``unknown``."""
    name = "exactly-once"
    rec, story, created, completed = run.record, run.applies, run.created, run.completed
    if rec is None or story is None or created is None or completed is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=run.record_missing() + "; without every revision, exactly-once cannot be shown",
        )
    amounts, ok, maybe = run.creates.amounts, run.creates.ok, run.creates.maybe
    accepted = ok | {t for t in maybe if t in created}
    anomalies = [f.to_json() for f in story.findings]
    sentences = [f.why for f in story.findings]
    _per_task(accepted, story, completed, amounts, sentences, anomalies)
    attributed = sum(amounts[t] * len(r) for t, r in story.by_task.items())
    total = _totals(story, attributed, (run.final or {}).get("counter"), sentences, anomalies)
    stats: dict[str, Any] = {
        "revisions": story.revisions,
        "applies": sum(len(v) for v in story.by_task.values()),
        "completed": len(completed),
        "counter_change": total,
        "attributed": attributed,
        "findings": len(story.findings),
        "record_revisions": [rec.get("from_revision"), rec.get("to_revision")],
    }
    if anomalies:
        summary = _told(sentences, len(story.findings))
        return CheckResult(
            checker=name, verdict=Verdict.INVALID, summary=summary, anomalies=anomalies,
            stats=stats,
        )  # fmt: skip
    once = sorted(story.by_task, key=lambda t: story.by_task[t][0])
    at = ", ".join(f"{t} at {story.by_task[t][0]}" for t in once[:5])
    at += f", and {len(once) - 5} more" if len(once) > 5 else ""
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"by etcd's record, each of the {len(completed)} completed task(s) was applied "
        f"exactly once ({at or 'none'}), the counter's change over the run ({attributed:+d}) is "
        f"their sum, and all {story.revisions} transactions under {rec.get('prefix')} were "
        "interpreted",
        stats=stats,
    )


def _totals(
    story: record.Applies,
    attributed: int,
    counter: Any,
    sentences: list[str],
    anomalies: list[dict[str, Any]],
) -> int | None:
    """The counter's change over the run (None: unreadable), checked against the attributed
    applies and against the final read's ``counter``."""
    total = None if story.final is None else story.final - (story.start or 0)
    if total is not None and total != attributed:
        sentences.append(
            f"the counter changed by {total:+d} over the run (from {story.start} to "
            f"{story.final}) but the applies attributed to tasks add up to {attributed:+d}"
        )
        anomalies.append({"kind": "total", "change": total, "attributed": attributed})
    if isinstance(counter, int) and story.final is not None and counter != story.final:
        sentences.append(
            f"the final read found the counter at {counter} but etcd's record ends with "
            f"{story.final}"
        )
        anomalies.append({"kind": "final-read", "counter": counter, "record": story.final})
    return total


def _told(sentences: list[str], findings: int) -> str:
    """The first writes no rule explains, then what they did to the tasks: both halves of the
    story in one line, however many revisions there are."""
    told = sentences[: min(2, findings)] + sentences[findings:][:3]
    told = told or sentences[:4]
    summary = "; ".join(told)
    if len(sentences) > len(told):
        summary += f" (and {len(sentences) - len(told)} more)"
    return summary


def _per_task(
    accepted: Set[str],
    story: record.Applies,
    completed: dict[str, int],
    amounts: dict[str, int],
    sentences: list[str],
    anomalies: list[dict[str, Any]],
) -> None:
    """Each task's applies against the promise: once if completed, never if not accepted."""
    for task_id in sorted(accepted | set(story.by_task) | set(completed)):
        revs = story.by_task.get(task_id, [])
        if len(revs) > 1:
            sentences.append(
                f"task {task_id} was applied {len(revs)} times (the counter changed by its "
                f"amount {amounts.get(task_id)} for it at revisions {', '.join(map(str, revs))})"
            )
            anomalies.append({"kind": "applied-more-than-once", "task_id": task_id,
                              "revisions": revs})  # fmt: skip
        elif not revs and task_id in completed:
            sentences.append(
                f"task {task_id} was completed (rev {completed[task_id]} wrote its task record "
                f"completed) but no transaction applied its amount ({amounts.get(task_id)}) to "
                "the counter"
            )
            anomalies.append({"kind": "completed-never-applied", "task_id": task_id,
                              "completed_at": completed[task_id]})  # fmt: skip
        if revs and task_id not in accepted:
            sentences.append(
                f"task {task_id} was applied at revision {revs[0]}, but its create was never "
                "accepted (the client was told it failed)"
            )
            anomalies.append({"kind": "applied-not-accepted", "task_id": task_id,
                              "revisions": revs})  # fmt: skip
