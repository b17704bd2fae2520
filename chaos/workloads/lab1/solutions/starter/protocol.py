"""lab1 starter: complete the three TODOs. Read docs/labs/lab1.md first.

The lock is a record at ``keys.lock(lock.name)`` with the columns of a ShedLock table plus a fencing
token: ``{"name", "lock_until", "locked_at", "locked_by", "token"}``.

1. ``acquire``: insert the record if it is absent, or take it over when ``lock_until <= now``, in ONE
   etcd transaction that fails if someone else changed the record meanwhile. Each grant gets a
   token larger than every earlier grant's. Return the token, or None when the lock is taken.
2. ``release``: set ``lock_until = max(locked_at + lock.at_least, now)`` — but only while the record
   is still your grant (a paused holder must not release its successor's lock).
3. ``write_change``: apply the change with the etcd form of
   ``UPDATE orders SET ..., last_token = :t WHERE id = :id AND last_token <= :t`` (0 rows = stale).
   Return ``APPLIED``, ``STALE`` (a later grant wrote the order) or ``ALREADY`` (this night's change
   is already in the order). Build the write with ``store.change_ops(row, change)``.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys  # noqa: F401 - the key layout you will need
from chaos.workloads.lab1.protocol_api import (  # noqa: F401 - the outcomes you will return
    ALREADY,
    APPLIED,
    STALE,
    Change,
    Lock,
    Store,
)


def acquire(store: Store, lock: Lock, now: float) -> int | None:
    """Take the lock if it is free or expired; return the new fencing token, or None."""
    raise NotImplementedError("TODO(lab1): implement acquire")


def release(store: Store, lock: Lock, token: int, now: float) -> bool:
    """Give the lock back (keeping it for at least ``lock.at_least``); True if it was still ours."""
    raise NotImplementedError("TODO(lab1): implement release")


def write_change(store: Store, lock: Lock, change: Change) -> str:
    """Apply one change, fenced by ``change.token``; return APPLIED, STALE or ALREADY."""
    raise NotImplementedError("TODO(lab1): implement write_change")
