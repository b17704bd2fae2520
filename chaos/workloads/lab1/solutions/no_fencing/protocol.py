"""BUGGY teaching example: the lease alone, no fencing token at the store.

The writer trusts that holding the lock means nobody else is writing. A holder paused past
``lockAtMostFor`` wakes up still believing it holds the lock and applies its changes again — after
the next holder already applied them.
"""

from __future__ import annotations

from chaos.workloads.lab1.protocol_api import APPLIED, Change, Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import acquire, extend, release

__all__ = ["acquire", "extend", "release", "write_change"]


def write_change(store: Store, lock: Lock, change: Change) -> str:
    row, _ = store.read_order(change.order)
    # BUG: no condition on last_token: "UPDATE orders SET balance = balance + :amount WHERE id = :id"
    store.txn(compare=[], success=store.change_ops(row, change))
    return APPLIED
