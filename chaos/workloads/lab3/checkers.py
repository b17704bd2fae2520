"""lab3 checkers: lost tasks, double apply, counter, delivery statistics.

Pure functions of a stored run. A create that completed ``ok`` was accepted; one that ended ``info``
(or never completed) may or may not have been, so it is lost only if the system shows it accepted it
(its task record exists) and never completed it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from chaos.checkers.etcd_scope import etcd_scope
from chaos.checkers.faults import FaultInterval, fault_intervals
from chaos.checkers.journal import Write, read_journal
from chaos.checkers.verdict import CheckResult, Verdict, check_safe
from chaos.histories.ops import Event, Op, OpType, pair_index
from chaos.histories.store import StoredRun
from chaos.workloads.lab3 import confirm, keys, record
from chaos.workloads.lab3.broker_config import broker_config
from chaos.workloads.lab3.points import FAULT_POINTS
from chaos.workloads.systems import record_values

# no "crash": the services never report one (the host makes and records crashes), so a crash
# event is a forgery and a chain shows the host's crashes instead (host_crashes)
CHAIN_KINDS = {
    "task-accepted", "publish", "publish-retry", "publish-ack-lost", "marked-published",
    "delivery", "compute", "commit", "suppressed", "ack", "fault-point", "protocol-error",
}  # fmt: skip


def _label(e: Event) -> str:
    if e.kind == "delivery" and int(e.data.get("num_delivered", 1)) > 1:
        return "redelivery"
    return e.kind


def host_crashes(history: list[Op]) -> list[dict[str, Any]]:
    """The crashes the host made at fault points and saw (their heal ops), for the chains."""
    return [
        op.value
        for op in history
        if op.extra.get("phase") == "heal"
        and isinstance(op.value, dict)
        and op.value.get("exit_seen_at") is not None
    ]


def chain(
    events: list[Event],
    task_id: str,
    faults: list[FaultInterval],
    crashes: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The task's events in time order, with the faults that were active at each step, and the
    crashes the host made at the point where the service said it was on this task."""
    out = [
        {
            "time": c["exit_seen_at"],
            "node": c.get("node"),
            "component": c.get("process"),
            "step": "crash",
            "data": {"fault": c.get("point"), "pid": c.get("killed_pid"), "by": "the host"},
        }
        for c in crashes or []
        if c.get("task_id") == task_id
    ]
    for e in events:
        if e.task_id != task_id or e.kind not in CHAIN_KINDS:
            continue
        step: dict[str, Any] = {
            "time": round(e.time, 3),
            "node": e.node,
            "component": e.component,
            "step": _label(e),
        }
        if e.data:
            step["data"] = e.data
        during = [
            f.describe() for f in faults if f.covers(e.time) and f.touches(e.node, e.component)
        ]
        if during:
            step["during"] = during
        out.append(step)
    return sorted(out, key=lambda st: float(st["time"]))


def _creates(history: list[Op]) -> tuple[dict[str, Op], set[str]]:
    """Accepted creates (ok, by task id) and indeterminate ones (info or never completed)."""
    pairs = pair_index(history)
    accepted: dict[str, Op] = {}
    maybe: set[str] = set()
    for pos, op in enumerate(history):
        if op.f != "create" or op.type is not OpType.INVOKE:
            continue
        task_id = str((op.value or {}).get("task_id"))
        comp = history[pairs[pos]] if pos in pairs else None
        if comp is not None and comp.type is OpType.OK:
            accepted[task_id] = comp
        elif comp is None or comp.type is OpType.INFO:
            maybe.add(task_id)
    return accepted, maybe - set(accepted)


def lost_tasks(run: StoredRun) -> CheckResult:
    name = "lost-tasks"
    accepted, maybe = _creates(run.history)
    if not run.final or "tasks" not in run.final:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"{_no_final(run)}, so the {len(accepted)} accepted tasks cannot be shown "
            "complete",
            stats={"accepted": len(accepted), "maybe": len(maybe)},
        )
    tasks: dict[str, str] = run.final.get("tasks", {})
    results: dict[str, Any] = run.final.get("results", {})
    faults = fault_intervals(run.history)
    rec = _record(run)
    published = record.outbox_events(rec) if rec is not None else None
    anomalies = []
    for task_id in sorted(set(accepted) | {t for t in maybe if t in tasks}):
        done = tasks.get(task_id) == "completed" and task_id in results
        if done:
            continue
        steps = chain(run.events, task_id, faults, host_crashes(run.history))
        why = _why_lost(task_id, steps, tasks, published)
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
            checker=name,
            verdict=Verdict.INVALID,
            summary=f"{len(anomalies)} task(s) lost: task {first['task_id']} {first['why']}{when}",
            anomalies=anomalies,
            stats={"accepted": len(accepted), "maybe": len(maybe), "lost": len(anomalies)},
        )
    done_maybe = sum(1 for t in maybe if tasks.get(t) == "completed")
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"all {len(accepted)} accepted tasks completed"
        + (f"; {done_maybe} of {len(maybe)} indeterminate creates also completed" if maybe else ""),
        stats={"accepted": len(accepted), "maybe": len(maybe), "lost": 0},
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


def _pause_before(faults: list[FaultInterval], node: str, t: float) -> FaultInterval | None:
    cands = [f for f in faults if f.touches(node) and f.start <= t]
    return cands[-1] if cands else None


def _commit_events(events: list[Event]) -> dict[str, list[Event]]:
    commits: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.kind == "commit" and e.event_id:
            commits[e.event_id].append(e)
    return commits


def _record(run: StoredRun) -> dict[str, Any] | None:
    """etcd's record of the run, when the final reads took all of it: without error, not cut at
    MAX_EVENTS, with the revision it starts from."""
    rec = (run.final or {}).get("record")
    return rec if record_values.unusable(rec) is None else None


def _no_final(run: StoredRun) -> str:
    """Why there is no final state, in words: the reads failed, or the run never got to them."""
    err = (run.final or {}).get("error")
    if err:
        return f"the final reads failed ({err})"
    return "no final state was read (the run ended before its final reads)"


def _record_missing(run: StoredRun) -> str:
    if (run.final or {}).get("error"):
        return _no_final(run)
    reason = record_values.unusable((run.final or {}).get("record"))
    return reason or "etcd's record of the run is complete"


def double_apply(run: StoredRun) -> CheckResult:
    """Each accepted task's amount reached the counter at most once, by etcd's own record.

    The service's commit events are narration: they name the deliveries and the faults around
    them, and a disagreement between them and the record is reported, but the verdict rests on
    the revisions that changed the counter.
    """
    name = "double-apply"
    rec = _record(run)
    if rec is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=_record_missing(run)
            + "; whether an effect was applied twice cannot be decided from what the service "
            "reported about itself",
        )
    faults = fault_intervals(run.history)
    amounts, _, _ = record.client_amounts(run.history)
    story = record.applies(rec, amounts)
    commits = _commit_events(run.events)
    event_ids = record.outbox_events(rec)
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    for task_id, revs in sorted(story.by_task.items(), key=lambda kv: kv[1][0]):
        if len(revs) >= 2:
            said, anomaly = _applied_twice(
                run, task_id, revs, story, amounts, commits, event_ids, faults
            )
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
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary="; ".join(sentences),
            anomalies=anomalies,
            stats=stats,
        )
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
    run: StoredRun,
    task_id: str,
    revs: list[int],
    story: record.Applies,
    amounts: dict[str, int],
    commits: dict[str, list[Event]],
    event_ids: dict[str, list[tuple[str, int]]],
    faults: list[FaultInterval],
) -> tuple[str, dict[str, Any]]:
    """One task applied more than once: the sentence (with the cause when the record shows it,
    and what the service said) and the anomaly."""
    times = {2: "twice", 3: "three times"}.get(len(revs), f"{len(revs)} times")
    reported = sorted(
        (c for cs in commits.values() for c in cs if c.task_id == task_id),
        key=lambda c: c.time,
    )
    said = f"the service reported {len(reported)} commit(s)" + (
        ": " + ", ".join(_commit_phrase(c, faults) for c in reported) if reported else ""
    )
    ids = event_ids.get(task_id, [])
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


def _commit_phrase(c: Event, faults: list[FaultInterval]) -> str:
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


def _answers(history: list[Op]) -> dict[str, tuple[str, list[dict[str, Any]]]]:
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


def idempotent_create(run: StoredRun) -> CheckResult:
    """One task, one event id: a create retried with the same task_id (after a timeout, a 5xx
    or a lost answer) must find the first transaction's idempotency record and return its event
    id, by etcd's record of the outbox entries and the answers the client got."""
    name = "idempotent-create"
    rec = _record(run)
    if rec is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=_record_missing(run) + "; whether a create wrote two outbox entries is unknown",
        )
    events = record.outbox_events(rec)
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
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary="; ".join(sentences),
            anomalies=anomalies,
            stats=stats,
        )
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


def counter_checker(run: StoredRun) -> CheckResult:
    """The final counter equals the sum of the amounts the client had accepted — the amounts as
    the orchestrator's own client sent them, the counter as etcd holds it."""
    name = "counter"
    rec = _record(run)
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
            checker=name, verdict=Verdict.UNKNOWN, summary=f"no final counter: {_no_final(run)}"
        )
    amounts, ok, maybe = record.client_amounts(run.history)
    created = record.created_tasks(rec) if rec is not None else set(final.get("tasks") or {})
    expected, accepted = record.expected_total(amounts, ok, maybe, created)
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


def exactly_once(run: StoredRun) -> CheckResult:
    """Exactly-once accounting from etcd's own record: every revision under the lab's prefix is
    interpreted (a known key with a readable value, a counter change attributed to a task), every
    completed task was applied exactly once, and the counter's change over the run is the sum of
    the attributed applies. A record that is missing, cut or compacted is ``unknown``."""
    name = "exactly-once"
    rec = _record(run)
    if rec is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=_record_missing(run) + "; without every revision, exactly-once cannot be shown",
        )
    amounts, ok, maybe = record.client_amounts(run.history)
    story = record.applies(rec, amounts)
    created = record.created_tasks(rec)
    completed = record.completed_tasks(rec)
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
    accepted: set[str],
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


def delivery_stats(run: StoredRun) -> CheckResult:
    """The delivery figures the lab report asks for, from the broker's own counts (JetStream's
    stream state and consumer info at the final reads). The services' events are narration,
    kept beside them as ``reported_*``: a solution can write any event it likes."""
    kinds = Counter(_label(e) for e in run.events)
    final = run.final or {}
    consumer = final.get("consumer") or {}
    raw_made, raw_firsts = (
        consumer.get("delivered_consumer_seq"),
        consumer.get("delivered_stream_seq"),
    )
    counted = isinstance(raw_made, int) and isinstance(raw_firsts, int)
    made = raw_made if isinstance(raw_made, int) else 0
    firsts = raw_firsts if isinstance(raw_firsts, int) else 0
    stats = {
        "stream_messages": (final.get("stream") or {}).get("messages"),
        "consumer_num_redelivered": consumer.get("num_redelivered"),
        # beyond the stream sequence it reached, every delivery the consumer made is a redelivery
        "deliveries": made if counted else None,
        "redeliveries": made - firsts if counted else None,
        "reported_deliveries": kinds.get("delivery", 0) + kinds.get("redelivery", 0),
        "reported_redeliveries": kinds.get("redelivery", 0),
        "publishes": kinds.get("publish", 0) + kinds.get("publish-retry", 0),
        "publish_retries": kinds.get("publish-retry", 0),
        "publish_acks_lost": kinds.get("publish-ack-lost", 0),
        "commits": kinds.get("commit", 0),
        "suppressed": kinds.get("suppressed", 0),
        "acks": kinds.get("ack", 0),
        "protocol_errors": kinds.get("protocol-error", 0),
    }
    errors = [e for e in run.events if e.kind == "protocol-error"]
    broker = (
        f"the broker: {stats['stream_messages']} message(s), {made} deliveries "
        f"({stats['redeliveries']} redeliveries)"
        if counted
        else f"the broker's counts were not read ({final.get('broker_error') or _no_final(run)})"
    )
    summary = (
        f"{broker}; the services reported {stats['publishes']} publishes "
        f"({stats['publish_retries']} retries), {stats['reported_deliveries']} deliveries, "
        f"{stats['commits']} commits, {stats['suppressed']} suppressed"
    )
    if errors:
        summary += f"; {len(errors)} protocol errors, first: {errors[0].data.get('error')}"
    return CheckResult(
        checker="delivery-stats",
        verdict=Verdict.VALID,
        summary=summary,
        stats=stats,
        anomalies=[{"protocol_error": e.to_json()} for e in errors[:20]],
    )


def _heal_value(history: list[Op], point: str) -> dict[str, Any] | None:
    """What the fault point's heal found (node, pid, fired_at, at_fire, restarted_pid)."""
    found = None
    for op in history:
        if (
            op.f == f"heal-{point}"
            and op.extra.get("phase") == "heal"
            and isinstance(op.value, dict)
        ):
            found = op.value  # the completion comes after the invoke: keep the last
    return found


def _injected(run: StoredRun) -> list[Write]:
    """The transactions the nodes' etcd proxies failed on the orchestrator's arming."""
    journal = read_journal(run.final)
    return [w for w in journal.writes if w.outcome == "injected"] if journal else []


def _keys(w: Write) -> str:
    keys = sorted({k for k, _, _ in (*w.puts, *w.maybe)})
    return ", ".join(keys[:4]) + (f" (and {len(keys) - 4} more)" if len(keys) > 4 else "")


def _proof(point: str, fired: dict[str, Any], run: StoredRun) -> tuple[bool, str]:
    """Whether the orchestrator's own observations confirm the point fired, and how (see
    chaos.workloads.lab3.confirm: the claim is the service's word, none of this is)."""
    final = run.final or {}
    if point in ("relay-crash-before-publish", "worker-crash-before-ack"):
        return _crash_proof(point, fired, final)
    if point == "lost-publish-ack":
        # copies of one event, read by chaos, never a message count any client can raise
        return confirm.republished(fired, final)
    if point == "lost-create-response":
        return _unanswered_create(run, fired.get("node"))
    if point in ("txn-error-complete", "txn-error-create"):
        # the node's etcd proxy failed the transaction, and its root-owned journal says so
        injected = _injected(run)
        if not injected:
            return False, f"no etcd proxy journaled a transaction it failed for {point}"
        w = injected[0]
        how = f"the etcd proxy on {w.node} failed a transaction writing {_keys(w)} (journal)"
    if point == "txn-error-complete":
        # and the broker: a failed commit is not ACKed, so it redelivers
        consumer = final.get("consumer") or {}
        made = int(consumer.get("delivered_consumer_seq") or 0)
        messages = int(consumer.get("delivered_stream_seq") or 0)
        return made > messages, (
            f"{how}; the broker made {made} deliveries of {messages} message(s) after the "
            f"failed commit on {fired.get('node')}"
        )
    if point == "txn-error-create":
        # and the orchestrator's own client: a create answered with a server error, retried
        for op in run.history:
            tries = op.extra.get("retried") if op.f == "create" else None
            for t in tries if isinstance(tries, list) else []:
                if isinstance(t, dict) and str(t.get("error", "")).startswith("HTTP 5"):
                    return (
                        True,
                        f"{how}; the client's create on {t.get('node')} got {t.get('error')}",
                    )
        return False, f"{how}; but no create in the history got a server error"
    return False, f"no way to confirm {point} is known"


def _crash_proof(point: str, fired: dict[str, Any], final: dict[str, Any]) -> tuple[bool, str]:
    """A crash point: the host saw the process die, and the state it left is the point's."""
    crashed, died = confirm.host_crash(fired)
    if point == "relay-crash-before-publish":
        held, state = confirm.unpublished_intent(fired)
        return crashed and held, f"{died}; {state}"
    order, state = confirm.split_delivery(fired)
    if order is None:
        return False, f"{died}; {state}"
    if order == "ack-first":
        # ACKed, never committed: if the killed process held it, nothing is left to redeliver
        # and it never completes; completed later, its holder was another process
        held, after = confirm.still_uncommitted(fired, final)
        return crashed and held, f"{died}; {state}; {after}"
    # committed and not ACKed: the broker itself must have delivered it again after the kill
    again, made, messages = confirm.redelivered(final)
    return crashed and again, (
        f"{died}; {state}; the broker made {made} deliveries of {messages} message(s), "
        f"{max(0, made - messages)} of them redeliveries"
    )


def _unanswered_create(run: StoredRun, node: Any) -> tuple[bool, str]:
    """The orchestrator's own client: a create attempt on ``node`` went unanswered."""
    for op in run.history:
        tries = op.extra.get("retried") if op.f == "create" else None
        for t in tries if isinstance(tries, list) else []:
            if isinstance(t, dict) and t.get("node") == node:
                task = op.value.get("task_id") if isinstance(op.value, dict) else None
                return True, (
                    f"the client's create of {task} on {t.get('node')} got no answer "
                    f"({t.get('error')}) and was retried on {op.extra.get('node')}"
                )
    return False, f"no create sent to {node} went unanswered in the history"


def scenario_fired(run: StoredRun) -> CheckResult:
    """A seed scenario counts only if its fault verifiably fired, by what the orchestrator saw
    itself: its own kill and the exit it watched, the state it read from etcd and the broker when
    the point was claimed, the broker's own counts. The service's claim and events are only
    where to look; a firing the host cannot confirm is unknown, never valid."""
    name = "scenario-fired"
    points = [n for n in run.spec.get("nemesis") or [] if n in FAULT_POINTS]
    phrases = [str(ph) for ph in run.spec.get("triggers") or []]
    fired_phrases = {
        str(op.extra["trigger"].get("phrase"))
        for op in run.history
        if isinstance(op.extra.get("trigger"), dict)
    }
    # a trigger that never fired tested nothing (a hostile solution can hide the point it
    # reaches by deleting the events that announce it): the run cannot count as valid
    silent = [ph for ph in phrases if ph.strip() not in fired_phrases]
    if silent and not points:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="the run does not count: the trigger "
            + ", ".join(repr(ph) for ph in silent)
            + " never fired, so the fault it asks for never happened",
        )
    if not points:
        return CheckResult(
            checker=name, verdict=Verdict.VALID, summary="no seed scenario in this run"
        )
    unconfirmed: list[str] = [f"the trigger {ph!r} never fired" for ph in silent]
    evidence: list[dict[str, Any]] = []
    for point in points:
        fired = _heal_value(run.history, point)
        if fired and fired.get("refused"):
            unconfirmed.append(f"{point}: the host refused its claim: {fired['refused']}")
            continue
        if not fired or fired.get("fired_at") is None:
            unconfirmed.append(f"{point} never fired (no process reached it before the run ended)")
            continue
        ok, how = _proof(point, fired, run)
        evidence.append({"point": point, "confirmed": ok, "how": how, **fired})
        if not ok:
            unconfirmed.append(f"{point} reported firing at {fired['fired_at']} s, but {how}")
    if unconfirmed:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="the scenario does not count: " + "; ".join(unconfirmed),
            anomalies=evidence,
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary="; ".join(f"{e['point']} fired at {e['fired_at']} s: {e['how']}" for e in evidence),
        stats={"points": points},
    )


def contradictions(results: list[CheckResult]) -> list[str]:
    """Pairs of lab3 verdicts on one run that cannot both be true, in words (none expected).

    The checkers read the same record from different sides; where one says an amount reached the
    counter twice and another that the counter matches the accepted amounts, one of them is wrong
    — unless a lost task made up for it, which lost-tasks then says."""
    by = {r.checker: r for r in results}
    out: list[str] = []
    da, counter, lost = by.get("double-apply"), by.get("counter"), by.get("lost-tasks")
    once = by.get("exactly-once")
    # a completed task that was never applied makes up for a double apply in the sum
    never = once is not None and any(
        a.get("kind") == "completed-never-applied" for a in once.anomalies
    )
    if da and counter and lost and not never:
        twice = da.verdict is Verdict.INVALID and any("revisions" in a for a in da.anomalies)
        if twice and counter.verdict is Verdict.VALID and lost.verdict is Verdict.VALID:
            out.append("double-apply found an amount applied twice, yet the counter matches and "
                       "no task was lost")  # fmt: skip
    if (
        counter
        and lost
        and counter.verdict is Verdict.INVALID
        and lost.verdict is Verdict.VALID
        and "never completed" in counter.summary
    ):
        out.append("counter blames tasks that never completed, yet lost-tasks found none")
    return out


def check_all(run: StoredRun) -> list[CheckResult]:
    return [
        check_safe("lost-tasks", lambda: lost_tasks(run)),
        check_safe("double-apply", lambda: double_apply(run)),
        check_safe("counter", lambda: counter_checker(run)),
        check_safe("exactly-once", lambda: exactly_once(run)),
        check_safe("idempotent-create", lambda: idempotent_create(run)),
        check_safe("delivery-stats", lambda: delivery_stats(run)),
        check_safe("scenario-fired", lambda: scenario_fired(run)),
        check_safe("etcd-scope", lambda: etcd_scope(run.final)),
        check_safe("broker-config", lambda: broker_config(run.final)),
    ]
