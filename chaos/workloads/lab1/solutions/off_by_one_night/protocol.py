"""BUGGY teaching example: the night guard lets the same night run again (``>`` instead of ``>=``).

The fencing token rejects a stale holder only *after* the new holder wrote an order. The other
order of events — the stale holder wakes up and reaches an order first, then the new holder writes
it — is what the night guard (the idempotency key) is for: ``row["night"] >= change.night`` means
"already applied". This solution compares with ``>``, so the new holder applies the night's
change a second time. It shows when a holder's write lands just after its lease's expiry, as the
next replica takes over (the grade matrix's ``resume-at-expiry``: ``--trigger "hold holder before
write of orders for 2.7s" -o job=20 -o nights=2``): ``no-double-apply`` names the order, the night
and both tokens, the late holder's write first.
"""

from __future__ import annotations

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import ALREADY, APPLIED, STALE, Change, Lock, Store
from chaos.workloads.lab1.solutions.reference.protocol import acquire, extend, release

__all__ = ["acquire", "extend", "release", "write_change"]


def write_change(store: Store, lock: Lock, change: Change) -> str:
    key = keys.order(change.order)
    while True:
        row, rev = store.read_order(change.order)
        if int(row["last_token"]) > change.token:
            return STALE
        # BUG: off by one: a row already at this night is not "already applied"
        if int(row["night"]) > change.night:
            return ALREADY
        ok, _ = store.txn(
            compare=[store.unchanged(key, rev)], success=store.change_ops(row, change)
        )
        if ok:
            return APPLIED
