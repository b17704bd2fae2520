"""BUGGY teaching example: dedup is checked *before* the transaction (check-then-act).

Two deliveries of one event that both pass the check before either commits both apply the effect:
exactly what a worker paused after its check, past AckWait, does when it resumes.
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
    seen, _ = store.get(keys.dedup(event_id))
    if seen is not None:  # BUG: the check is not part of the commit below
        return DUPLICATE
    result = compute(event)
    while True:
        counter, counter_rev = store.get_int(keys.COUNTER)
        ok, _ = store.txn(
            compare=[store.unchanged(keys.COUNTER, counter_rev)],
            success=[
                store.put(keys.dedup(event_id), {"task_id": task_id}),
                store.put(keys.result(task_id), {"event_id": event_id, **result}),
                store.put(
                    keys.task(task_id),
                    {"task_id": task_id, "amount": amount, "status": "completed"},
                ),
                store.put(keys.COUNTER, counter + amount),
            ],
        )
        if ok:
            return COMMITTED
