"""What a lab3 solution (``protocol.py``) is given: the store and the delivery.

A solution defines two functions (see docs/labs/lab3.md)::

    def create(store: Store, task_id: str, amount: int, event_id: str) -> str
    def complete(store: Store, event: dict, compute: Callable[[dict], dict], delivery: Delivery) -> str

This module runs on the nodes: standard library and ``etcd3`` only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from chaos.node.store import JsonStore
from chaos.node.store import found as found  # a solution's helper, kept where it was named

COMMITTED = "committed"
DUPLICATE = "duplicate"


class Delivery(Protocol):
    """One delivery of a JetStream message to this worker.

    The transport ACKs after ``complete`` returns. A solution must not call ``ack`` itself; the
    method exists so that the buggy teaching example can show what ACK-before-commit loses.
    """

    num_delivered: int
    acked: bool

    def ack(self) -> None: ...


class Store(JsonStore):
    """etcd as a solution sees it: JSON values, compares and transactions.

    ``txn`` is the only way to write; every successful ``txn`` is a commit. Values are JSON.
    """

    def __init__(self, client: Any, before_commit: Callable[[], None] | None = None) -> None:
        super().__init__(client)
        self._before_commit = before_commit or (lambda: None)

    def get_int(self, key: str) -> tuple[int, int]:
        value, rev = self.get(key)
        return int(value or 0), rev

    def txn(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any] = ()
    ) -> tuple[bool, list[Any]]:
        """One atomic etcd transaction: ``success`` if every compare holds, else ``failure``."""
        self._before_commit()
        return self._transact(compare, success, failure)
