"""BUGGY teaching example: an error during the commit is reported as DUPLICATE.

Everything is right on the happy path (one transaction, dedup and counter compared), but any
exception from the store — etcd unreachable, a timeout — is swallowed and answered "duplicate",
so the transport ACKs a delivery whose effect never committed: the task is lost. Only an error
path shows it: ``--nemesis txn-error-complete`` makes the commit's transaction fail once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.workloads.lab3.protocol_api import DUPLICATE, Delivery, Store
from chaos.workloads.lab3.solutions.reference.protocol import complete as _complete
from chaos.workloads.lab3.solutions.reference.protocol import create

__all__ = ["complete", "create"]


def complete(
    store: Store,
    event: dict[str, Any],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
    delivery: Delivery,
) -> str:
    try:
        return _complete(store, event, compute, delivery)
    except Exception:
        return DUPLICATE  # BUG: "it must have been done already" — nothing says so
