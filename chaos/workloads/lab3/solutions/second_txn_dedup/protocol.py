"""BUGGY teaching example: the dedup record is written in a *second* transaction.

The effect (counter, result, completed task) commits first with no dedup compare; the dedup record
follows in its own transaction, and a delivery that finds it already there reports DUPLICATE. Two
deliveries of one event both apply the effect, and the second one still says "duplicate" — so the
service's own events show one commit. The per-task result keeps a running total, so the results
even add up to the inflated counter. Only the database's own record (two transactions changing the
counter for one task) and the client's history (the amounts it asked for) tell the truth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.workloads.lab3 import keys
from chaos.workloads.lab3.protocol_api import COMMITTED, DUPLICATE, Delivery, Store
from chaos.workloads.lab3.solutions.reference.protocol import create

__all__ = ["complete", "create"]


def complete(
    store: Store,
    event: dict[str, Any],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
    delivery: Delivery,
) -> str:
    event_id, task_id, amount = event["event_id"], event["task_id"], int(event["amount"])
    result = compute(event)
    while True:
        counter, counter_rev = store.get_int(keys.COUNTER)
        previous, _ = store.get(keys.result(task_id))
        total = int((previous or {}).get("amount", 0)) + amount  # BUG: a running total
        ok, _ = store.txn(
            compare=[store.unchanged(keys.COUNTER, counter_rev)],
            success=[
                store.put(keys.result(task_id), {"event_id": event_id, **result, "amount": total}),
                store.put(
                    keys.task(task_id),
                    {"task_id": task_id, "amount": amount, "status": "completed"},
                ),
                store.put(keys.COUNTER, counter + amount),
            ],
        )
        if ok:
            break
    # BUG: the dedup record is not part of the transaction that applied the effect
    first, _ = store.txn(
        compare=[store.absent(keys.dedup(event_id))],
        success=[store.put(keys.dedup(event_id), {"task_id": task_id})],
    )
    return COMMITTED if first else DUPLICATE
