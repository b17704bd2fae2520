"""The hold points lab1's triggers arm (``pause holder before write-commit``)."""

from __future__ import annotations

from chaos.core.capabilities import HoldPoint

_GRANT = HoldPoint("orders", "lock-acquired", "lab1: right after the lock was granted")
_WRITE = HoldPoint("orders", "write", "lab1: the job about to write one order's change")
_WRITE_COMMIT = HoldPoint(
    "orders", "write-commit", "lab1: between a solution's reads and its write transaction"
)
_ACQUIRE_COMMIT = HoldPoint(
    "orders", "acquire-commit", "lab1: between acquire's read of the lock and its write"
)

# every event kind lab1's replicas report (a trigger's ``until`` names one)
EVENT_KINDS = (
    "start",
    "lock-acquired",
    "lock-busy",
    "lock-renewed",
    "renewal-failed",
    "lock-released",
    "job-start",
    "write",
    "job-end",
    "etcd-error",
    "txn",
    "fault-point",
    "crash",
    "protocol-error",
)

# (role, moment, event kind) -> the hold point a trigger phrase arms
HOLD_POINTS: dict[tuple[str, str, str], HoldPoint] = {
    ("holder", "on", "lock-acquired"): _GRANT,
    ("holder", "after", "lock-acquired"): _GRANT,
    ("orders", "after", "lock-acquired"): _GRANT,
    ("holder", "before", "write"): _WRITE,
    ("orders", "before", "write"): _WRITE,
    ("holder", "before", "write-commit"): _WRITE_COMMIT,
    ("orders", "before", "write-commit"): _WRITE_COMMIT,
    # nobody holds the lock yet at this point: the replica trying to take it is "orders"
    ("orders", "before", "acquire-commit"): _ACQUIRE_COMMIT,
}
