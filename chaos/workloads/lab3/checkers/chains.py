"""A task's chain: its events in time order with the faults active at each step, and the crashes
the host made while the service said it was on the task. Narration for the checkers' anomalies
and the lab report's excerpt, never evidence for a verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.faults import FaultInterval
from chaos.histories.ops import Event

# no "crash": the services never report one (the host makes and records crashes), so a crash
# event is a forgery and a chain shows the host's crashes instead (model.host_crashes)
CHAIN_KINDS = {
    "task-accepted", "publish", "publish-retry", "publish-ack-lost", "marked-published",
    "delivery", "compute", "commit", "suppressed", "ack", "fault-point", "protocol-error",
}  # fmt: skip


def label(e: Event) -> str:
    if e.kind == "delivery" and int(e.data.get("num_delivered", 1)) > 1:
        return "redelivery"
    return e.kind


def chain(
    events: Sequence[Event],
    task_id: str,
    faults: Sequence[FaultInterval],
    crashes: Sequence[dict[str, Any]] | None = None,
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
            "step": label(e),
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
