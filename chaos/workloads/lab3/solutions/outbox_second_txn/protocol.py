"""BUGGY teaching example: the outbox entry is written in a *second* transaction.

The task and its idempotency record commit first; the outbox entry follows in a transaction of
its own. An api that dies between the two (``--trigger "kill api after txn 1 of create"``) leaves
an accepted task with no publication intent: the client's retry finds the idempotency record and
is answered the first event id, but nothing will ever publish it — the task is lost.
"""

from __future__ import annotations

from chaos.workloads.lab3 import keys
from chaos.workloads.lab3.protocol_api import Store, found
from chaos.workloads.lab3.solutions.reference.protocol import complete

__all__ = ["complete", "create"]


def create(store: Store, task_id: str, amount: int, event_id: str) -> str:
    ok, responses = store.txn(
        compare=[store.absent(keys.idempotency(task_id))],
        success=[
            store.put(keys.idempotency(task_id), event_id),
            store.put(
                keys.task(task_id), {"task_id": task_id, "amount": amount, "status": "pending"}
            ),
        ],
        failure=[store.get_op(keys.idempotency(task_id))],
    )
    if not ok:
        return str(found(responses[0]))
    # BUG: the intent to publish is not part of the transaction that accepted the task
    store.txn(
        compare=[],
        success=[
            store.put(
                keys.outbox(event_id),
                {"event_id": event_id, "task_id": task_id, "amount": amount, "status": "pending"},
            )
        ],
    )
    return event_id
