"""What a lab1 solution (``protocol.py``) is given: the store, the clock and the job's parameters.

A solution defines three functions (see docs/labs/lab1.md)::

    def acquire(store: Store, lock: Lock, now: float) -> int | None
    def release(store: Store, lock: Lock, token: int, now: float) -> bool
    def write_change(store: Store, lock: Lock, change: Change) -> str

and may define ``extend(store, lock, token, now) -> bool`` (lease renewal; used only when the
service is started with renewal on).

The lock record at ``keys.lock(lock.name)`` is a JSON object with ShedLock's columns plus the fencing
token::

    {"name": "reconciliation", "lock_until": 1764412801.5, "locked_at": 1764412798.5,
     "locked_by": "n2", "token": 7}

Times are seconds on the node's clock (``store.now()``). An order's row at ``keys.order(order)`` is
``{"order": "o3", "balance": 21, "last_token": 7, "night": 4}``: ``night`` is the last night whose
change was applied to it.

This module runs on the nodes: standard library and ``etcd3`` only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.node.store import JsonStore
from chaos.node.store import found as found  # a solution's helper, kept where it was named
from chaos.workloads.lab1 import keys

APPLIED = "applied"
STALE = "rejected-stale"
ALREADY = "already-applied"
OUTCOMES = (APPLIED, STALE, ALREADY)

REQUIRED = ["acquire", "release", "write_change"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lock:
    """The job's lock parameters, in seconds (ShedLock's ``@SchedulerLock`` attributes)."""

    name: str
    me: str  # this replica's name, stored as ``locked_by``
    at_most: float  # lockAtMostFor: how long a holder that died keeps everyone else out
    at_least: float  # lockAtLeastFor: the minimum time the lock stays taken after a grant


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One change of one night's reconciliation: add ``amount`` to ``order``'s balance."""

    order: str
    night: int
    amount: int
    token: int  # the fencing token of the grant this job runs under


class Clock:
    """The node's clock. ``skew`` shifts it, to try what lockAtLeastFor protects against."""

    def __init__(self, skew: float = 0.0) -> None:
        self.skew = skew

    def now(self) -> float:
        return time.time() + self.skew


class Store(JsonStore):
    """etcd as a solution sees it: JSON values, compares and transactions.

    ``txn`` is the only way to write. An order changes only through ``change_ops``, which also
    records the application under ``keys.applied(...)`` in the same transaction, so every applied
    change is visible in the final state.
    """

    def __init__(
        self,
        client: Any,
        *,
        node: str,
        clock: Clock | None = None,
        before_write: Callable[[Change], None] | None = None,
    ) -> None:
        super().__init__(client)
        self.node = node
        self.clock = clock or Clock()
        self._before_write = before_write or (lambda change: None)
        self._pending: dict[int, Change] = {}

    def now(self) -> float:
        """The node's clock now (the same clock the service passes as ``now``)."""
        return self.clock.now()

    def read_order(self, order: str) -> tuple[dict[str, Any], int]:
        """An order's row and its mod revision; a never-written order is a zero row at revision 0
        (``unchanged(keys.order(order), 0)`` then means "still never written")."""
        row, rev = self.get(keys.order(order))
        if row is None:
            row = {"order": order, "balance": 0, "last_token": 0, "night": 0}
        return row, rev

    def change_ops(self, row: dict[str, Any], change: Change) -> list[Any]:
        """The operations that apply ``change`` on top of ``row`` (as read): the new row, with
        ``last_token`` set to the change's token, and the application record."""
        new = {
            **row,
            "order": change.order,
            "balance": int(row.get("balance", 0)) + change.amount,
            "last_token": change.token,
            "night": change.night,
        }
        record = {
            "order": change.order,
            "night": change.night,
            "token": change.token,
            "amount": change.amount,
            "node": self.node,
            "at": self.now(),
        }
        nonce = uuid.uuid4().hex[:8]
        ops = [
            self.put(keys.order(change.order), new),
            self.put(
                keys.applied(change.order, change.night, change.token, self.node, nonce), record
            ),
        ]
        for op in ops:
            self._pending[id(op)] = change
        return ops

    def txn(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any] = ()
    ) -> tuple[bool, list[Any]]:
        """One atomic etcd transaction: ``success`` if every compare holds, else ``failure``."""
        pending, self._pending = self._pending, {}
        change = next((pending[id(op)] for op in success if id(op) in pending), None)
        if change is not None:
            # the last instant before an order is written: where a checked-then-written lease
            # goes stale if the process stops here
            self._before_write(change)
        return self._transact(compare, success, failure)
