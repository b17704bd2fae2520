"""``lost-tasks``: every accepted task completed.

A create that completed ``ok`` was accepted; one that ended ``info`` (or never completed) may or
may not have been, so it is lost only if the system shows it accepted it (its task record exists)
and never completed it.
"""

from __future__ import annotations

from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.workloads.lab3.checkers.chains import chain
from chaos.workloads.lab3.model import Lab3Run


def lost_tasks(run: Lab3Run) -> CheckResult:
    name = "lost-tasks"
    accepted, maybe = run.creates.accepted, run.creates.undecided
    if not run.final or "tasks" not in run.final:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"{run.no_final()}, so the {len(accepted)} accepted tasks cannot be shown "
            "complete",
            stats={"accepted": len(accepted), "maybe": len(maybe)},
        )
    tasks: dict[str, str] = run.final.get("tasks", {})
    results: dict[str, Any] = run.final.get("results", {})
    anomalies = []
    for task_id in sorted(set(accepted) | {t for t in maybe if t in tasks}):
        done = tasks.get(task_id) == "completed" and task_id in results
        if done:
            continue
        steps = chain(run.events, task_id, run.faults, run.crashes)
        why = _why_lost(task_id, steps, tasks, run.outbox)
        anomalies.append(
            {
                "task_id": task_id,
                "status": tasks.get(task_id, "absent"),
                "accepted": task_id in accepted,
                "why": why,
                "chain": steps,
            }
        )
    if anomalies:
        return _lost(run, anomalies, len(accepted), len(maybe))
    done_maybe = sum(1 for t in maybe if tasks.get(t) == "completed")
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"all {len(accepted)} accepted tasks completed"
        + (f"; {done_maybe} of {len(maybe)} indeterminate creates also completed" if maybe else ""),
        stats={"accepted": len(accepted), "maybe": len(maybe), "lost": 0},
    )


def _lost(run: Lab3Run, anomalies: list[dict[str, Any]], accepted: int, maybe: int) -> CheckResult:
    first = anomalies[0]
    rest = (run.final or {}).get("at_rest")
    # the final reads came early: nothing was owed any more, the broker held no message
    when = (
        f" (read once the system had stood still {float(rest):.1f} s with no message left "
        "in the broker)"
        if isinstance(rest, int | float)
        else ""
    )
    return CheckResult(
        checker="lost-tasks",
        verdict=Verdict.INVALID,
        summary=f"{len(anomalies)} task(s) lost: task {first['task_id']} {first['why']}{when}",
        anomalies=anomalies,
        stats={"accepted": accepted, "maybe": maybe, "lost": len(anomalies)},
    )


def _why_lost(
    task_id: str,
    steps: list[dict[str, Any]],
    tasks: dict[str, str],
    published: dict[str, list[tuple[str, int]]] | None,
) -> str:
    """Why a task never completed, from etcd's record first, then from its chain of events."""
    acked = [s for s in steps if s["step"] == "ack"]
    commits = [s for s in steps if s["step"] == "commit"]
    suppressed = [s for s in steps if s["step"] == "suppressed"]
    if published is not None and task_id in tasks and not published.get(task_id):
        # the database's record: the task was accepted with no intent to publish it
        return (
            "etcd holds its task record but no outbox entry was ever written for it: the "
            "intent to publish was not saved in the transaction that accepted the task"
        )
    if acked and suppressed and not commits:
        return (
            f"the solution answered 'duplicate' for its delivery on {suppressed[0]['node']} "
            f"at {suppressed[0]['time']:.2f} s and it was ACKed, but its effect was never "
            "committed: an error taken for a duplicate, and the broker will never deliver "
            "it again"
        )
    if acked and not commits:
        return (
            f"its delivery was ACKed by {acked[0]['node']} at {acked[0]['time']:.2f} s "
            "but no commit followed, so the broker will never deliver it again"
        )
    if task_id not in tasks:
        return "the create was acknowledged but no task record exists"
    return "never completed after recovery"
