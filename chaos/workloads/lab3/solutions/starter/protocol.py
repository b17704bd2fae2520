"""lab3 starter: complete the two TODOs. Read docs/labs/lab3.md first.

Rules of the lab:
1. ``create``: the task, its idempotency record and its outbox entry are written in ONE etcd
   transaction. A retry of the same ``task_id`` must return the event id of the first call.
2. ``complete``: the dedup record, the result, the completed task and the counter increment are
   written in ONE transaction; compare the counter's revision so concurrent commits do not lose
   updates; compare the dedup record *inside* the transaction.
3. Do not call ``delivery.ack()``: the transport ACKs after ``complete`` returns (ACK after commit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.workloads.lab3 import keys  # noqa: F401 - the key layout you will need
from chaos.workloads.lab3.protocol_api import Delivery, Store


def create(store: Store, task_id: str, amount: int, event_id: str) -> str:
    """Record the task, its idempotency record and its outbox entry atomically; return the event id."""
    raise NotImplementedError("TODO(lab3): implement create")


def complete(
    store: Store,
    event: dict[str, Any],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
    delivery: Delivery,
) -> str:
    """Apply the event's effect at most once; return "committed" or "duplicate"."""
    raise NotImplementedError("TODO(lab3): implement complete")
