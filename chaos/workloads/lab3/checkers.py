"""lab3 checkers: lost tasks, double apply, counter, delivery statistics.

Pure functions of a stored run. A create that completed ``ok`` was accepted; one that ended ``info``
(or never completed) may or may not have been, so it is lost only if the system shows it accepted it
(its task record exists) and never completed it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from chaos.checkers.faults import FaultInterval, fault_intervals
from chaos.checkers.verdict import CheckResult, Verdict, check_safe
from chaos.histories.ops import Event, Op, OpType, pair_index
from chaos.histories.store import StoredRun

CHAIN_KINDS = {
    "task-accepted", "publish", "publish-retry", "publish-ack-lost", "marked-published",
    "delivery", "compute", "commit", "suppressed", "ack", "crash", "fault-point", "protocol-error",
}  # fmt: skip


def _label(e: Event) -> str:
    if e.kind == "delivery" and int(e.data.get("num_delivered", 1)) > 1:
        return "redelivery"
    return e.kind


def chain(events: list[Event], task_id: str, faults: list[FaultInterval]) -> list[dict[str, Any]]:
    """The task's events in time order, with the faults that were active at each step."""
    out = []
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
    return out


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
            summary="no final state was read (the run ended before its final reads), "
            f"so the {len(accepted)} accepted tasks cannot be shown complete",
            stats={"accepted": len(accepted), "maybe": len(maybe)},
        )
    tasks: dict[str, str] = run.final.get("tasks", {})
    results: dict[str, Any] = run.final.get("results", {})
    faults = fault_intervals(run.history)
    anomalies = []
    for task_id in sorted(set(accepted) | {t for t in maybe if t in tasks}):
        done = tasks.get(task_id) == "completed" and task_id in results
        if done:
            continue
        steps = chain(run.events, task_id, faults)
        acked = [s for s in steps if s["step"] == "ack"]
        commits = [s for s in steps if s["step"] == "commit"]
        why = "never completed after recovery"
        if acked and not commits:
            why = (
                f"its delivery was ACKed by {acked[0]['node']} at {acked[0]['time']:.2f} s "
                "but no commit followed, so the broker will never deliver it again"
            )
        elif task_id not in tasks:
            why = "the create was acknowledged but no task record exists"
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
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary=f"{len(anomalies)} task(s) lost: task {first['task_id']} {first['why']}",
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


def _pause_before(faults: list[FaultInterval], node: str, t: float) -> FaultInterval | None:
    cands = [f for f in faults if f.touches(node) and f.start <= t]
    return cands[-1] if cands else None


def double_apply(run: StoredRun) -> CheckResult:
    name = "double-apply"
    faults = fault_intervals(run.history)
    commits: dict[str, list[Event]] = defaultdict(list)
    for e in run.events:
        if e.kind == "commit" and e.event_id:
            commits[e.event_id].append(e)
    anomalies: list[dict[str, Any]] = []
    sentences = []
    for event_id, cs in sorted(commits.items(), key=lambda kv: kv[1][0].time):
        if len(cs) < 2:
            continue
        task_id = cs[0].task_id or "?"
        parts = [f"commit by {cs[0].node} at {cs[0].time:.2f} s"]
        for c in cs[1:]:
            redeliv = "redelivered " if int(c.data.get("num_delivered", 1)) > 1 else ""
            p = _pause_before(faults, c.node, c.time)
            after = f" after {p.describe()}" if p else ""
            parts.append(f"{redeliv}commit by {c.node} at {c.time:.2f} s{after}")
        times = {2: "twice", 3: "three times"}.get(len(cs), f"{len(cs)} times")
        sentences.append(f"task {task_id}: counter incremented {times} — {', '.join(parts)}")
        anomalies.append(
            {
                "task_id": task_id,
                "event_id": event_id,
                "commits": [
                    {"node": c.node, "time": round(c.time, 3), "pid": c.pid, **c.data} for c in cs
                ],
                "chain": chain(run.events, task_id, faults),
            }
        )
    counter = run.final.get("counter") if run.final else None
    results = (run.final or {}).get("results", {})
    applied = sum(int(r.get("amount", 0)) for r in results.values())
    stats: dict[str, Any] = {
        "commits": sum(len(c) for c in commits.values()),
        "counter": counter,
        "sum_of_results": applied if run.final else None,
    }
    if counter is not None and counter > applied:
        sentences.append(
            f"the counter is {counter} but the {len(results)} results add up to {applied}: "
            f"{counter - applied} was applied more than once"
        )
        anomalies.append({"kind": "counter-excess", "counter": counter, "sum_of_results": applied})
    if anomalies:
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary="; ".join(sentences),
            anomalies=anomalies,
            stats=stats,
        )
    if counter is None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="no commit was seen twice, but without a final counter an "
            "unreported commit cannot be ruled out",
            stats=stats,
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"every event committed at most once; counter {counter} equals "
        f"the sum of {len(results)} results",
        stats=stats,
    )


def counter_checker(run: StoredRun) -> CheckResult:
    name = "counter"
    if not run.final or run.final.get("counter") is None:
        return CheckResult(checker=name, verdict=Verdict.UNKNOWN, summary="no final counter read")
    counter = int(run.final["counter"])
    results = run.final.get("results", {})
    applied = sum(int(r.get("amount", 0)) for r in results.values())
    if counter < applied:
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary=f"lost update: the counter is {counter} but the {len(results)} results add up "
            f"to {applied}",
            anomalies=[{"counter": counter, "sum_of_results": applied}],
            stats={"counter": counter, "sum_of_results": applied},
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"counter {counter}, {len(results)} results",
        stats={"counter": counter, "sum_of_results": applied},
    )


def delivery_stats(run: StoredRun) -> CheckResult:
    kinds = Counter(_label(e) for e in run.events)
    final = run.final or {}
    stats = {
        "stream_messages": (final.get("stream") or {}).get("messages"),
        "consumer_num_redelivered": (final.get("consumer") or {}).get("num_redelivered"),
        "deliveries": kinds.get("delivery", 0) + kinds.get("redelivery", 0),
        "redeliveries": kinds.get("redelivery", 0),
        "publishes": kinds.get("publish", 0) + kinds.get("publish-retry", 0),
        "publish_retries": kinds.get("publish-retry", 0),
        "publish_acks_lost": kinds.get("publish-ack-lost", 0),
        "commits": kinds.get("commit", 0),
        "suppressed": kinds.get("suppressed", 0),
        "acks": kinds.get("ack", 0),
        "crashes": kinds.get("crash", 0),
        "protocol_errors": kinds.get("protocol-error", 0),
    }
    errors = [e for e in run.events if e.kind == "protocol-error"]
    summary = (
        f"{stats['publishes']} publishes ({stats['publish_retries']} retries), "
        f"{stats['deliveries']} deliveries ({stats['redeliveries']} redeliveries), "
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


def check_all(run: StoredRun) -> list[CheckResult]:
    return [
        check_safe("lost-tasks", lambda: lost_tasks(run)),
        check_safe("double-apply", lambda: double_apply(run)),
        check_safe("counter", lambda: counter_checker(run)),
        check_safe("delivery-stats", lambda: delivery_stats(run)),
    ]
