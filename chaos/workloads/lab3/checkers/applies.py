"""``double-apply``: each accepted task's amount reached the counter at most once, by etcd's own
record. The service's commit events are narration: they name the deliveries and the faults around
them, and a disagreement between them and the record is reported, but the verdict rests on the
revisions that changed the counter."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chaos.checkers.faults import FaultInterval
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Event
from chaos.workloads.lab3 import keys, record
from chaos.workloads.lab3.checkers.chains import chain
from chaos.workloads.lab3.checkers.common import invalid
from chaos.workloads.lab3.model import Lab3Run


def _pause_before(faults: Sequence[FaultInterval], node: str, t: float) -> FaultInterval | None:
    cands = [f for f in faults if f.touches(node) and f.start <= t]
    return cands[-1] if cands else None


def _commit_events(events: Sequence[Event]) -> dict[str, list[Event]]:
    commits: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.kind == "commit" and e.event_id:
            commits[e.event_id].append(e)
    return commits


def double_apply(run: Lab3Run) -> CheckResult:
    """Each accepted task's amount reached the counter at most once, by etcd's own record."""
    name = "double-apply"
    rec, story = run.record, run.applies
    if rec is None or story is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=run.record_missing()
            + "; whether an effect was applied twice cannot be decided from what the service "
            "reported about itself",
        )
    amounts = run.creates.amounts
    commits = _commit_events(run.events)
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    for task_id, revs in sorted(story.by_task.items(), key=lambda kv: kv[1][0]):
        if len(revs) >= 2:
            said, anomaly = _applied_twice(run, task_id, revs, story, commits)
            sentences.append(said)
            anomalies.append(anomaly)
    _counter_story_gaps(story, sentences, anomalies)
    counter = (run.final or {}).get("counter")
    expected = sum(amounts.get(t, 0) for t in story.by_task)
    if anomalies and isinstance(counter, int) and story.final == counter and counter > expected:
        anomalies.append({"kind": "counter-excess", "counter": counter, "applied_once": expected})
    notes = _narration_mismatch(story, commits)
    stats: dict[str, Any] = {
        "applies": sum(len(v) for v in story.by_task.values()),
        "counter_changes": len(story.changes),
        "reported_commits": sum(len(c) for c in commits.values()),
        "record_revisions": [rec.get("from_revision"), rec.get("to_revision")],
    }
    if notes:
        stats["narration"] = notes
    if anomalies:
        return invalid(name, sentences, anomalies, stats)
    summary = (
        f"by etcd's record, every accepted task's amount reached the counter at most once "
        f"({stats['applies']} applies in {len(story.changes)} changes of the counter)"
    )
    return CheckResult(
        checker=name, verdict=Verdict.VALID, summary=summary + _but(notes), stats=stats
    )


def _but(notes: list[str]) -> str:
    """Where the service's narration disagrees with the record, said after a valid verdict."""
    if not notes:
        return ""
    more = f" (and {len(notes) - 3} more disagreements)" if len(notes) > 3 else ""
    return "; but " + "; ".join(notes[:3]) + more


def _counter_story_gaps(
    story: record.Applies, sentences: list[str], anomalies: list[dict[str, Any]]
) -> None:
    """Counter writes that could not be read, and changes no accepted task explains: "at most
    once" means something only when every write of the counter is read."""
    for f in story.counter_findings:
        sentences.append(f"{f.why} — the counter's story cannot be read past it")
        anomalies.append(f.to_json())
    for u in story.unexplained:
        who = f"a transaction that wrote {', '.join(u['keys'])}"
        sentences.append(
            f"the counter changed by {u['delta']:+d} at revision {u['revision']} in {who}, "
            "which matches no accepted task's amount"
        )
        anomalies.append({"kind": "unexplained-change", **u})


def _applied_twice(
    run: Lab3Run,
    task_id: str,
    revs: list[int],
    story: record.Applies,
    commits: dict[str, list[Event]],
) -> tuple[str, dict[str, Any]]:
    """One task applied more than once: the sentence (with the cause when the record shows it,
    and what the service said) and the anomaly."""
    amounts, faults = run.creates.amounts, run.faults
    times = {2: "twice", 3: "three times"}.get(len(revs), f"{len(revs)} times")
    reported = sorted(
        (c for cs in commits.values() for c in cs if c.task_id == task_id),
        key=lambda c: c.time,
    )
    said = f"the service reported {len(reported)} commit(s)" + (
        ": " + ", ".join(_commit_phrase(c, faults) for c in reported) if reported else ""
    )
    ids = (run.outbox or {}).get(task_id, [])
    # the cause, when the record shows it: one task published under two event ids passes
    # every dedup check, so the fault is the create's, not the complete's; an apply whose
    # transaction wrote no dedup record left nothing for the next delivery to find
    undeduped = [
        c.revision
        for c in story.changes
        if c.revision in revs and not any(k.startswith(keys.DEDUP_PREFIX) for k in c.keys)
    ]
    cause = ""
    if len(ids) > 1:
        cause = (
            f" — under {len(ids)} event ids: its create was not idempotent (see idempotent-create)"
        )
    elif undeduped:
        cause = (
            f" — the transaction(s) at revision {', '.join(map(str, undeduped))} changed the "
            "counter without writing the dedup record, so nothing stopped the next delivery"
        )
    else:
        cause = (
            " — each of those transactions wrote the dedup record: it was not compared "
            "inside the transaction (checked before it, or not at all)"
        )
    sentence = (
        f"task {task_id}: counter incremented {times} by its amount ({amounts.get(task_id)}) "
        f"— etcd shows the counter changed for it at revisions {', '.join(map(str, revs))}"
        f"{cause}; {said}"
    )
    anomaly = {
        "task_id": task_id,
        "amount": amounts.get(task_id),
        "revisions": revs,
        # what the service reported (narration), beside what etcd recorded
        "commits": [
            {"node": c.node, "time": round(c.time, 3), "pid": c.pid, **c.data} for c in reported
        ],
        "chain": chain(run.events, task_id, faults),
    }
    return sentence, anomaly


def _commit_phrase(c: Event, faults: Sequence[FaultInterval]) -> str:
    redeliv = "redelivered " if int(c.data.get("num_delivered", 1)) > 1 else ""
    p = _pause_before(faults, c.node, c.time)
    after = f" after {p.describe()}" if p else ""
    return f"{redeliv}commit by {c.node} at {c.time:.2f} s{after}"


def _narration_mismatch(story: record.Applies, commits: dict[str, list[Event]]) -> list[str]:
    """Where the service's commit events and etcd's record disagree, in words."""
    out = []
    by_task_reported: dict[str, int] = defaultdict(int)
    for cs in commits.values():
        for c in cs:
            if c.task_id:
                by_task_reported[c.task_id] += 1
    for task_id in sorted(set(by_task_reported) | set(story.by_task)):
        said, seen = by_task_reported.get(task_id, 0), len(story.by_task.get(task_id, []))
        if said != seen:
            # more "committed" answers than applies is the solution's contract broken (a delivery
            # that applied nothing must answer "duplicate"), not an effect applied twice
            contract = (
                " (complete answered 'committed' for a delivery that applied nothing: it must "
                "answer 'duplicate')"
                if said > seen
                else ""
            )
            out.append(
                f"the service reported {said} commit(s) of task {task_id}; etcd shows {seen} "
                f"apply(ies)"
                + (f" at revision(s) {', '.join(map(str, story.by_task[task_id]))}" if seen else "")
                + contract
            )
    return out
