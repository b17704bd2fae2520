"""``idempotent-create``: one task, one event id, by etcd's record of the outbox entries and the
answers the orchestrator's own client got."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op, OpType
from chaos.workloads.lab3.checkers.common import invalid
from chaos.workloads.lab3.model import Lab3Run


def _answers(history: Sequence[Op]) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """The event id each answered create got, by task, with the attempts retried before it."""
    out: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for op in history:
        if op.f == "create" and op.type is OpType.OK and isinstance(op.value, dict):
            retried = op.extra.get("retried") if isinstance(op.extra, dict) else None
            out[str(op.value.get("task_id"))] = (
                str(op.value.get("event_id")),
                list(retried) if isinstance(retried, list) else [],
            )
    return out


def idempotent_create(run: Lab3Run) -> CheckResult:
    """One task, one event id: a create retried with the same task_id (after a timeout, a 5xx
    or a lost answer) must find the first transaction's idempotency record and return its event
    id, by etcd's record of the outbox entries and the answers the client got."""
    name = "idempotent-create"
    events = run.outbox
    if events is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=run.record_missing() + "; whether a create wrote two outbox entries is unknown",
        )
    answers = _answers(run.history)
    retried = {t for t, (_, r) in answers.items() if r}
    sentences: list[str] = []
    anomalies: list[dict[str, Any]] = []
    for task_id, ids in sorted(events.items(), key=lambda kv: kv[1][0][1]):
        answer, tries = answers.get(task_id, ("", []))
        if len(ids) < 2 and (not answer or answer == ids[0][0]):
            continue
        sentences.append(_two_event_ids(task_id, ids, answer, tries))
        anomalies.append(
            {
                "task_id": task_id,
                "event_ids": [e for e, _ in ids],
                "revisions": [r for _, r in ids],
                "answered": answer or None,
                "retried": tries,
            }
        )
    stats = {"tasks": len(events), "retried_creates": len(retried)}
    if anomalies:
        return invalid(name, sentences, anomalies, stats)
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"every task has one event id by etcd's record ({len(retried)} retried "
        "create(s) answered with the first one)",
        stats=stats,
    )


def _two_event_ids(
    task_id: str, ids: list[tuple[str, int]], answer: str, tries: list[dict[str, Any]]
) -> str:
    """What went wrong with one task's create: two outbox entries, or an answer the outbox does
    not hold (after which retries, if any)."""
    why = ""
    if tries:
        lost = ", ".join(f"{t.get('node')} ({t.get('error')})" for t in tries)
        why = f" after the client retried it (earlier attempts: {lost})"
    listed = ", ".join(f"{e} at revision {r}" for e, r in ids)
    if len(ids) > 1:
        return (
            f"task {task_id}: the create wrote {len(ids)} outbox entries ({listed}){why}; a "
            "retry with the same task_id must return the first event id"
        )
    return (
        f"task {task_id}: the client was answered event id {answer}{why}, but the outbox "
        f"holds {ids[0][0]}"
    )
