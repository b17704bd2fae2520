"""The final state of a lab1 run, read from etcd on the host after heal and recovery.

Shape (``final.json``)::

    {"config": {"order_ids": ["o1", ...], "nights": 6, "lock_at_most": 30, ...},
     "lock": {"name": "reconciliation", "lock_until": ..., "locked_at": ..., "locked_by": "n2",
              "token": 9},
     "orders": {"o1": {"balance": 21, "last_token": 9, "night": 6, "rev": 88,
                       "applied": [{"night": 1, "token": 1, "node": "n1", "amount": 4,
                                    "at": ..., "rev": 12}, ...]}},
     "nights": {"1": {"night": 1, "node": "n1", "token": 1, "at": ...}, ...},
     "nights_done": [1, 2, 3, 4, 5, 6],
     "lock_history": [{"rev": 14, "name": "reconciliation", "lock_until": ..., "locked_at": ...,
                       "locked_by": "n1", "token": 1}, ...]}

``rev`` is the etcd revision that wrote the entry: the order in which the store applied changes.
``lock_history`` is every version of the lock record, oldest first, read back through etcd's MVCC
revisions (the record's own times and tokens, in the store's order of writes: what
``lease-exclusivity`` judges); it stops early, without failing the read, if etcd compacted them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chaos.workloads.lab1 import keys
from chaos.workloads.systems import record_values
from chaos.workloads.systems.etcd import GRPC_OPTIONS


def _client(endpoints: list[str], timeout: float) -> Any:
    import etcd3

    eps = []
    for ep in endpoints:
        host, _, port = ep.rpartition(":")
        eps.append(
            etcd3.Endpoint(
                host or "127.0.0.1", int(port), secure=False, time_retry=1.0, opts=GRPC_OPTIONS
            )
        )
    return etcd3.MultiEndpointEtcd3Client(eps, timeout=timeout, failover=True)


def _scan(client: Any, prefix: str) -> Iterable[tuple[str, Any, Any]]:
    # decoded the one way the record's replay decodes: a value that is not JSON reaches the
    # checkers (which name it) instead of stopping the final reads
    for value, meta in client.get_prefix(prefix):
        yield meta.key.decode(), record_values.decode(value), meta


def read_final(etcd_endpoints: list[str], *, timeout: float = 5.0) -> dict[str, Any]:
    """Everything lab1 keeps in etcd, as JSON data (``host:port`` endpoints)."""
    client = _client(etcd_endpoints, timeout)
    try:
        value, _ = client.get(keys.CONFIG)
        config = record_values.decode(value) if value is not None else {}
        config = config if isinstance(config, dict) else {}
        locks = {
            k.removeprefix(keys.LOCKS_PREFIX): v for k, v, _ in _scan(client, keys.LOCKS_PREFIX)
        }
        orders: dict[str, dict[str, Any]] = {}
        for order_id in config.get("order_ids", []):
            orders[order_id] = {"balance": 0, "last_token": 0, "night": 0, "rev": 0, "applied": []}
        for k, v, meta in _scan(client, keys.ORDERS_PREFIX):
            order_id = k.removeprefix(keys.ORDERS_PREFIX)
            row = {**(v if isinstance(v, dict) else {"balance": v}), "rev": int(meta.mod_revision)}
            row.pop("order", None)
            orders[order_id] = {**row, "applied": []}
        for _k, v, meta in _scan(client, keys.APPLIED_PREFIX):
            if not isinstance(v, dict) or "order" not in v:
                continue  # not an application record: exactly-once names the write
            order_id = str(v["order"])
            orders.setdefault(
                order_id, {"balance": 0, "last_token": 0, "night": 0, "rev": 0, "applied": []}
            )
            entry = {x: v[x] for x in ("night", "token", "node", "amount", "at") if x in v}
            orders[order_id]["applied"].append({**entry, "rev": int(meta.create_revision)})
        for row in orders.values():
            row["applied"].sort(key=lambda e: e["rev"])
        lock_name = str(config.get("lock", keys.JOB))
        history = lock_history(client, keys.lock(lock_name))
        nights = {}
        for k, v, _ in _scan(client, keys.NIGHTS_PREFIX):
            nights[str(int(k.removeprefix(keys.NIGHTS_PREFIX)))] = v
        return {
            "config": config,
            "lock": locks.get(str(config.get("lock", keys.JOB))),
            "locks": locks,
            "orders": dict(sorted(orders.items(), key=lambda kv: _order_key(kv[0]))),
            "nights": dict(sorted(nights.items(), key=lambda kv: int(kv[0]))),
            "nights_done": sorted(int(n) for n in nights),
            "lock_history": history,
        }
    finally:
        client.close()


MAX_LOCK_VERSIONS = 10_000


def lock_history(client: Any, key: str) -> list[dict[str, Any]]:
    """Every version of ``key``, oldest first, each with its mod revision as ``rev``: the current
    one, then the one before it (read at its mod revision minus one), back to its creation."""
    out: list[dict[str, Any]] = []
    value, meta = client.get(key)
    while value is not None and meta is not None and len(out) < MAX_LOCK_VERSIONS:
        rev = int(meta.mod_revision)
        record = record_values.decode(value)
        if isinstance(record, str):
            record = {"raw": record}
        out.append({**(record if isinstance(record, dict) else {"value": record}), "rev": rev})
        if int(meta.version) <= 1 or rev <= 1:
            break
        try:
            value, meta = client.get(key, revision=rev - 1)
        except Exception as e:
            if "compacted" not in f"{type(e).__name__} {e}".lower():
                raise  # a timeout: the final reads are tried again, not cut short
            break  # compacted: the versions read so far are still the record's
    out.reverse()
    return out


def _order_key(order_id: str) -> tuple[int, str]:
    digits = order_id.lstrip("o")
    return (int(digits) if digits.isdigit() else 0, order_id)


def finished(final: dict[str, Any]) -> bool:
    """Whether the replicas have run every night they were configured to run (``nights`` > 0):
    the recovery condition of a run; an open-ended run (``nights`` = 0) never finishes."""
    limit = int((final.get("config") or {}).get("nights") or 0)
    return limit > 0 and set(range(1, limit + 1)) <= set(final.get("nights_done") or [])
