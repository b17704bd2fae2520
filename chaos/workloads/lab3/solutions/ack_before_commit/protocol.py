"""BUGGY teaching example: the message is ACKed *before* the commit.

A worker that dies between its ACK and its commit loses the task: the broker will never deliver the
event again, and nothing in etcd records that the effect is still owed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.workloads.lab3.protocol_api import Delivery, Store
from chaos.workloads.lab3.solutions.reference.protocol import complete as _commit
from chaos.workloads.lab3.solutions.reference.protocol import create

__all__ = ["complete", "create"]


def complete(
    store: Store,
    event: dict[str, Any],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
    delivery: Delivery,
) -> str:
    delivery.ack()  # BUG: the broker forgets the event before the effect is committed
    return _commit(store, event, compute, delivery)
