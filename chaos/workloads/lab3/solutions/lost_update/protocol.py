"""BUGGY teaching example: the counter is written without comparing its revision (a lost update).

Dedup record, result, completed task and counter commit in one transaction, with the dedup record
compared — but not the counter's revision. Two workers that read the counter before either commits
both write "what I read + my amount", and one amount is lost. The standard workload's commits are
rarely that close; ``--ack-wait 1 --trigger "pause worker before txn 1 of complete for 0.6s"``
holds one worker between its read and its transaction while the others commit.
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
    counter, _ = store.get_int(keys.COUNTER)
    ok, _ = store.txn(
        compare=[store.absent(keys.dedup(event_id))],  # BUG: no store.unchanged(COUNTER, rev)
        success=[
            store.put(keys.dedup(event_id), {"task_id": task_id}),
            store.put(keys.result(task_id), {"event_id": event_id, **result}),
            store.put(
                keys.task(task_id), {"task_id": task_id, "amount": amount, "status": "completed"}
            ),
            store.put(keys.COUNTER, counter + amount),
        ],
    )
    return COMMITTED if ok else DUPLICATE
