"""BUGGY teaching example: acquire reads the lock, then writes it without comparing its revision.

The read ("is the lock free or expired?") and the write ("it is mine now") are two steps, and the
write is unconditional: ``INSERT``/``UPDATE shedlock ... WHERE name = :name`` without ``AND
lock_until <= :now``. Two replicas that both read the expired record both write it, and both
believe they hold the lock — with the same token, since each computed it from the record it read.
A replica stopped between its read and its write (``--trigger "pause orders before
acquire-commit for 2s" -o nights=6``) overwrites whoever took the lock meanwhile. ``lease-exclusivity`` names
the two grants whose leases overlap; ``stale-writes`` the token granted twice.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import extend, release, write_change

__all__ = ["acquire", "extend", "release", "write_change"]


def acquire(store: Store, lock: Lock, now: float) -> int | None:
    key = keys.lock(lock.name)
    record, _rev = store.get(key)
    if record is None:
        token = 1
    elif float(record["lock_until"]) <= now:
        token = int(record["token"]) + 1
    else:
        return None
    new = {
        "name": lock.name,
        "lock_until": now + lock.at_most,
        "locked_at": now,
        "locked_by": lock.me,
        "token": token,
    }
    # BUG: no compare on the record's revision (or its absence): whatever happened since the read
    # above is overwritten
    store.txn(compare=[], success=[store.put(key, new)])
    return token
