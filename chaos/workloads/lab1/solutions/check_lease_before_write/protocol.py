"""BUGGY teaching example: re-read the lease right before writing, instead of fencing the write.

The check and the write are two steps. A process stopped between them (a GC pause, SIGSTOP) wakes up
after its lease expired and another replica wrote, and then writes anyway: the check it passed is
stale. Only a condition evaluated by the store, in the write itself, closes the gap.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import APPLIED, STALE, Change, Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import acquire, extend, release

__all__ = ["acquire", "extend", "release", "write_change"]


def write_change(store: Store, lock: Lock, change: Change) -> str:
    record, _ = store.get(keys.lock(lock.name))
    if (
        record is None
        or int(record["token"]) != change.token
        or float(record["lock_until"]) <= store.now()
    ):
        return STALE  # the lease is gone: stop
    row, _ = store.read_order(change.order)
    # BUG: the check above is not part of this write; a pause here makes it worthless
    store.txn(compare=[], success=store.change_ops(row, change))
    return APPLIED
