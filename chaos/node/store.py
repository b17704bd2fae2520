"""etcd as a lab solution sees it: JSON values, compares and transactions.

Each lab subclasses this with its own hooks (lab3: a fault point before a worker's commit; lab1:
a hold before an order is written) and its own helpers. Runs on the nodes: standard library only,
on top of an ``etcd3`` client it is given.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class JsonStore:
    def __init__(self, client: Any) -> None:
        self.client = client

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
        ok, responses = self.client.transaction(
            compare=list(compare), success=list(success), failure=list(failure)
        )
        return bool(ok), list(responses or [])

    def txn(
        self, compare: Sequence[Any], success: Sequence[Any], failure: Sequence[Any] = ()
    ) -> tuple[bool, list[Any]]:
        """One atomic etcd transaction: ``success`` if every compare holds, else ``failure``."""
        return self._transact(compare, success, failure)
