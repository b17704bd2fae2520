"""etcd as a lab solution sees it: JSON values, compares and transactions.

Each lab subclasses this with its own hooks (lab3: a fault point before a worker's commit; lab1:
a hold before an order is written) and its own helpers. Runs on the nodes: standard library only,
on top of an ``etcd3`` client it is given.

Transaction points: while the service runs one of the solution's functions (``with
store.calling("complete"):``), every transaction the solution makes is numbered (1, 2, ...) and
is a hold point before it is sent and after it returns — ``before-txn2-complete``,
``after-txn1-create`` — that a trigger can arm (``kill api after txn 1 of create``). Bugs of "two
transactions that should be one" live exactly there, and the framework's own steps never reach
them. Each transaction is also reported as a ``txn`` event (function, number, whether its compares
held): the trace ``chaos explore`` enumerates points from. The trace is the service's word, used
only to choose where to aim faults, never as evidence for a verdict.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol


class TxnHooks(Protocol):
    """What a store needs from its service to make transaction points: a hold (returns at once
    unless the orchestrator armed that point) and the event log."""

    def hold(
        self, kind: str, *, task_id: str | None = None, event_id: str | None = None
    ) -> None: ...

    def txn_event(
        self, fn: str, n: int, ok: bool, task_id: str | None, rev: int | None = None
    ) -> None: ...


def found(response: Any) -> Any:
    """The JSON value a ``get_op`` in a transaction returned, or None."""
    for item in response or []:
        value = item[0] if isinstance(item, tuple) else item
        if value is not None:
            return json.loads(value)
    return None


class _Call(threading.local):
    fn: str | None = None
    n: int = 0
    task_id: str | None = None


def _written_revision(responses: Sequence[Any]) -> int | None:
    """The etcd revision a transaction wrote (its puts' and deletes' response header), or None
    when it wrote nothing: etcd's own place for it in the order of writes."""
    for r in responses:
        which = r.WhichOneof("response") if hasattr(r, "WhichOneof") else None
        if which in ("response_put", "response_delete_range"):
            rev = int(getattr(r, which).header.revision)
            return rev if rev > 0 else None
    return None


class JsonStore:
    def __init__(self, client: Any) -> None:
        self.client = client
        self._txn_hooks: TxnHooks | None = None
        self._call = _Call()

    def set_txn_hooks(self, hooks: TxnHooks | None) -> None:
        self._txn_hooks = hooks

    @contextlib.contextmanager
    def calling(self, fn: str, *, task_id: str | None = None) -> Iterator[None]:
        """Number the transactions of one call of the solution's ``fn`` (per thread)."""
        call = self._call
        saved = (call.fn, call.n, call.task_id)
        call.fn, call.n, call.task_id = fn, 0, task_id
        try:
            yield
        finally:
            call.fn, call.n, call.task_id = saved

    # reads
    def get(self, key: str) -> tuple[Any, int]:
        """The JSON value at ``key`` and its mod revision, or ``(None, 0)`` when absent."""
        value, meta = self.client.get(key)
        if value is None:
            return None, 0
        return json.loads(value), int(meta.mod_revision)

    # compares
    def absent(self, key: str) -> Any:
        return self.client.transactions.version(key) == 0

    def unchanged(self, key: str, mod_revision: int) -> Any:
        """True while ``key`` was not written since it was read at ``mod_revision`` (0: absent)."""
        return self.client.transactions.mod(key) == mod_revision

    # operations inside a transaction
    def put(self, key: str, value: Any) -> Any:
        return self.client.transactions.put(key, json.dumps(value, sort_keys=True))

    def get_op(self, key: str) -> Any:
        return self.client.transactions.get(key)

    def _transact(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any]
    ) -> tuple[bool, list[Any]]:
        call, hooks = self._call, self._txn_hooks
        if call.fn is None or hooks is None:
            return self._send(compare, success, failure)
        call.n += 1
        fn, n, task_id = call.fn, call.n, call.task_id
        hooks.hold(f"before-txn{n}-{fn}", task_id=task_id)
        # (txn-error-* faults are the node's etcd proxy's to fire, not this process's: see
        # chaos.node.etcd_proxy)
        ok, responses = self._send(compare, success, failure)
        hooks.txn_event(fn, n, ok, task_id, _written_revision(responses))
        hooks.hold(f"after-txn{n}-{fn}", task_id=task_id)
        return ok, responses

    def _send(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any]
    ) -> tuple[bool, list[Any]]:
        ok, responses = self.client.transaction(
            compare=list(compare), success=list(success), failure=list(failure)
        )
        return bool(ok), list(responses or [])

    def txn(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any] = ()
    ) -> tuple[bool, list[Any]]:
        """One atomic etcd transaction: ``success`` if every compare holds, else ``failure``."""
        return self._transact(compare, success, failure)
