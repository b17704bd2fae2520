"""lab1 reference solution: a ShedLock-style lease with a fencing token, and fenced writes.

Every write is a conditional update, the etcd form of::

    UPDATE orders SET balance = balance + :amount, last_token = :t, night = :n
     WHERE id = :id AND last_token <= :t AND night < :n        -- 0 rows: stale or already done

The compare on the row's revision makes the read and the write one atomic step.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import ALREADY, APPLIED, STALE, Change, Lock, Store


def acquire(store: Store, lock: Lock, now: float) -> int | None:
    """Insert the lock record, or take it over when ``lock_until <= now``; return the new token.

    The token is the previous grant's plus one, written in the same compare-and-swap as the grant,
    so two grants can never share a token and a later grant always has a larger one.
    """
    key = keys.lock(lock.name)
    record, rev = store.get(key)
    if record is None:
        token, guard = 1, store.absent(key)
    elif float(record["lock_until"]) <= now:
        token, guard = int(record["token"]) + 1, store.unchanged(key, rev)
    else:
        return None
    ok, _ = store.txn(
        compare=[guard],
        success=[
            store.put(
                key,
                {
                    "name": lock.name,
                    "lock_until": now + lock.at_most,
                    "locked_at": now,
                    "locked_by": lock.me,
                    "token": token,
                },
            )
        ],
    )
    return token if ok else None


def release(store: Store, lock: Lock, token: int, now: float) -> bool:
    """Set ``lock_until = max(locked_at + at_least, now)`` — only if the lock is still this grant.

    A holder that was paused past its lease must not shorten the lease of whoever holds it now.
    """
    key = keys.lock(lock.name)
    record, rev = store.get(key)
    if record is None or int(record["token"]) != token or record["locked_by"] != lock.me:
        return False
    until = max(float(record["locked_at"]) + lock.at_least, now)
    ok, _ = store.txn(
        compare=[store.unchanged(key, rev)],
        success=[store.put(key, {**record, "lock_until": until})],
    )
    return ok


def extend(store: Store, lock: Lock, token: int, now: float) -> bool:
    """Renew the lease: ``lock_until = now + at_most`` while it is still ours and not expired."""
    key = keys.lock(lock.name)
    record, rev = store.get(key)
    if record is None or int(record["token"]) != token or float(record["lock_until"]) <= now:
        return False
    ok, _ = store.txn(
        compare=[store.unchanged(key, rev)],
        success=[store.put(key, {**record, "lock_until": now + lock.at_most})],
    )
    return ok


def write_change(store: Store, lock: Lock, change: Change) -> str:
    """Apply ``change`` unless a newer grant already wrote the order, or this night already did."""
    key = keys.order(change.order)
    while True:
        row, rev = store.read_order(change.order)
        if int(row["last_token"]) > change.token:
            return STALE  # a later grant has written here: this process no longer holds the lock
        if int(row["night"]) >= change.night:
            return ALREADY  # idempotent: the stale holder may have reached this order first
        ok, _ = store.txn(
            compare=[store.unchanged(key, rev)], success=store.change_ops(row, change)
        )
        if ok:
            return APPLIED
        # the row moved between the read and the write: read it again and decide again
