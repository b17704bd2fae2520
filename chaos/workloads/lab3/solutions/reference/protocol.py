"""lab3 reference solution: one atomic create, one atomic complete with dedup, ACK after commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.workloads.lab3 import keys
from chaos.workloads.lab3.protocol_api import COMMITTED, DUPLICATE, Delivery, Store, found


def create(store: Store, task_id: str, amount: int, event_id: str) -> str:
    """Task + idempotency record + outbox entry in one transaction; a retry returns the first id."""
    ok, responses = store.txn(
        compare=[store.absent(keys.idempotency(task_id))],
        success=[
            store.put(keys.idempotency(task_id), event_id),
            store.put(
                keys.task(task_id), {"task_id": task_id, "amount": amount, "status": "pending"}
            ),
            store.put(
                keys.outbox(event_id),
                {"event_id": event_id, "task_id": task_id, "amount": amount, "status": "pending"},
            ),
        ],
        failure=[store.get_op(keys.idempotency(task_id))],
    )
    if ok:
        return event_id
    return str(found(responses[0]))


def complete(
    store: Store,
    event: dict[str, Any],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
    delivery: Delivery,
) -> str:
    """Dedup record + result + completed task + counter in one transaction.

    The dedup record is *compared* inside the transaction (not checked before it), and the counter's
    revision is compared too, so a concurrent commit makes this one retry instead of losing an update.
    """
    event_id, task_id, amount = event["event_id"], event["task_id"], int(event["amount"])
    result = compute(event)  # may run more than once: only the commit must be unique
    while True:
        counter, counter_rev = store.get_int(keys.COUNTER)
        ok, responses = store.txn(
            compare=[
                store.absent(keys.dedup(event_id)),
                store.unchanged(keys.COUNTER, counter_rev),
            ],
            success=[
                store.put(keys.dedup(event_id), {"task_id": task_id}),
                store.put(keys.result(task_id), {"event_id": event_id, **result}),
                store.put(
                    keys.task(task_id),
                    {"task_id": task_id, "amount": amount, "status": "completed"},
                ),
                store.put(keys.COUNTER, counter + amount),
            ],
            failure=[store.get_op(keys.dedup(event_id))],
        )
        if ok:
            return COMMITTED
        if found(responses[0]) is not None:
            return DUPLICATE
        # only the counter moved under us: read it again and retry
