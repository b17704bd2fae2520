"""BUGGY teaching example: the lease renewal does not check that this replica still holds the lock.

ShedLock's extend is ``UPDATE shedlock SET lock_until = :until WHERE name = :name AND locked_by =
:me AND lock_until > :now``. This one drops the last two conditions: a holder that was paused past
its lease wakes up, renews "its" lease — in fact its successor's — is told it succeeded, and goes
on acting as the holder. A leader whose renewal should have failed did not stop. Run with renewal
on and an answer held past the lease (the grade matrix's ``renewal``: ``-o renew=2 -o nights=2 -o
lock_at_most=15 --trigger "hold holder after write of orders for 2.5s"``): ``lease-exclusivity``
names the renewal made after another replica had taken the lock.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import acquire, release, write_change

__all__ = ["acquire", "extend", "release", "write_change"]


def extend(store: Store, lock: Lock, token: int, now: float) -> bool:
    key = keys.lock(lock.name)
    record, rev = store.get(key)
    if record is None:
        return False
    # BUG: no check that the record is still this grant (token, locked_by) and not expired
    ok, _ = store.txn(
        compare=[store.unchanged(key, rev)],
        success=[store.put(key, {**record, "lock_until": now + lock.at_most})],
    )
    return ok
