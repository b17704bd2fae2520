"""BUGGY teaching example: a re-acquire by the same replica keeps its old token.

"It is still me, so it is still my token": when the lock record names this replica as the last
holder, ``acquire`` takes it over again without incrementing the token. Two grants then share a
token, and the store can no longer tell the older one's writes from the newer one's — a paused
earlier grant of this replica is not fenced off by its own later grant. Tokens must increase with
*every* grant. The bug fires whenever one replica takes the lock twice in a row, which a run of
ten nights does almost always (``-o nights=10``, no nemesis needed): ``stale-writes`` names the
token and both grants.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import extend, release, write_change

__all__ = ["acquire", "extend", "release", "write_change"]


def acquire(store: Store, lock: Lock, now: float) -> int | None:
    key = keys.lock(lock.name)
    record, rev = store.get(key)
    if record is None:
        token, guard = 1, store.absent(key)
    elif float(record["lock_until"]) <= now:
        guard = store.unchanged(key, rev)
        # BUG: the same replica keeps its token instead of taking the next one
        same = record.get("locked_by") == lock.me
        token = int(record["token"]) if same else int(record["token"]) + 1
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
