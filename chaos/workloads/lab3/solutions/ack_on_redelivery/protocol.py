"""BUGGY teaching example: a *redelivered* message is ACKed before the commit.

First deliveries are handled right (commit, then ACK). A redelivery — "we have seen this one, it
must be nearly done" — is ACKed first. A worker that dies between that ACK and its commit loses the
task: the broker never delivers it again. It takes two faults in one task's life: one that makes a
redelivery, and one between the redelivery's ACK and its commit —
``-o set_size=1 --trigger "kill worker before txn 1 of complete for 0.2s 2 times"``
(one task, and the first kill restarts the worker at once, so that
the second kill lands in its redelivery).
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
    if delivery.num_delivered > 1:
        delivery.ack()  # BUG: a redelivery is forgotten by the broker before its commit
    return _commit(store, event, compute, delivery)
