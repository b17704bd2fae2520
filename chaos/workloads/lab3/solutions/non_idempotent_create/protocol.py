"""BUGGY teaching example: ``create`` is not idempotent.

Task, idempotency record and outbox entry are written in one transaction, as they should be — but
with no compare on the idempotency record, so a retry of the same task_id (the client's answer was
lost, or it timed out) writes a second outbox entry under a new event id. Two events for one task
pass every dedup check (their event ids differ), and the effect is applied twice. A fault-free run
never retries, so it passes; ``--nemesis lost-create-response`` makes the retry happen.
"""

from __future__ import annotations

from chaos.workloads.lab3 import keys
from chaos.workloads.lab3.protocol_api import Store
from chaos.workloads.lab3.solutions.reference.protocol import complete

__all__ = ["complete", "create"]


def create(store: Store, task_id: str, amount: int, event_id: str) -> str:
    store.txn(
        compare=[],  # BUG: no `store.absent(keys.idempotency(task_id))`
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
    )
    return event_id
