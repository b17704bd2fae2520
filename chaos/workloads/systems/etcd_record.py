"""etcd's own record of a run: every revision of a key prefix since the run began.

etcd keeps the history of every key (MVCC) until it is compacted; every write of one transaction
shares one revision. Replaying a watch from the revision the run started at therefore lists every
transaction the code under test committed on the lab's keys, in order, with the values it wrote
— the database's word, not the service's. Checkers attribute each change of the counter to the
task whose keys the same transaction wrote, so an effect applied twice shows as two revisions.

To know the replay is complete, the orchestrator writes a sentinel key with a fresh nonce under the
prefix and reads until the watch delivers it: a watch delivers events in revision order, so
everything before the sentinel has arrived. A history compacted since the run began (only the code
under test could have asked for that) cannot be replayed: the record then says so, and checkers
that need it answer ``unknown``.
"""

from __future__ import annotations

import secrets
import threading
import types
from typing import Any

import etcd3.watch

from chaos.workloads.systems.record_values import MAX_EVENTS, MAX_VALUE, decode

# python3-etcd3 0.13 no longer depends on six, but its watcher still calls six.itervalues when a
# watch stream ends (when the client closes), printing a NameError traceback from its thread
if not hasattr(etcd3.watch, "six"):
    etcd3.watch.six = types.SimpleNamespace(itervalues=lambda d: iter(d.values()))

SENTINEL = "~chaos-record-end"
__all__ = ["MAX_EVENTS", "MAX_VALUE", "SENTINEL", "replay"]


def replay(client: Any, prefix: str, from_revision: int, timeout: float = 10.0) -> dict[str, Any]:
    """Every transaction on keys under ``prefix`` from ``from_revision`` on, as JSON data:

    ``{"source": "etcd", "prefix", "from_revision", "to_revision", "txns": [{"revision",
    "puts": {key: value}, "deletes": [key]}], "error": str | None, "truncated": bool}``.
    """
    record: dict[str, Any] = {
        "source": "etcd",
        "prefix": prefix,
        "from_revision": from_revision,
        "to_revision": None,
        "txns": [],
        "error": None,
        "truncated": False,
    }
    nonce = secrets.token_hex(8)
    sentinel = prefix + SENTINEL
    try:
        client.put(sentinel, nonce)
    except Exception as e:
        record["error"] = f"could not write the end marker: {type(e).__name__}: {e}"
        return record
    txns: dict[int, dict[str, Any]] = {}
    done = threading.Event()
    failure: list[str] = []

    def collect() -> None:
        count = 0
        try:
            responses, cancel = client.watch_prefix_response(prefix, start_revision=from_revision)
            try:
                for response in responses:
                    for ev in response.events:
                        key = ev.key.decode("utf-8", errors="replace")
                        rev = int(ev.mod_revision)
                        if key == sentinel and ev.value == nonce.encode():
                            record["to_revision"] = rev
                            done.set()
                            return
                        # a marker with another value is the code under test's write (or an
                        # earlier run's): it stays in the record, where checkers judge it
                        count += 1
                        if count > MAX_EVENTS:
                            record["truncated"] = True
                            continue
                        _add(txns, rev, key, ev)
            finally:
                cancel()
        except Exception as e:  # RevisionCompactedError, a lost connection
            failure.append(_failure(e, from_revision))
        finally:
            done.set()

    threading.Thread(target=collect, name="etcd-record", daemon=True).start()
    if not done.wait(timeout):
        record["error"] = f"the replay did not reach the end marker within {timeout:g} s"
    elif failure:
        record["error"] = failure[0]
    record["txns"] = [txns[r] for r in sorted(txns)]
    return record


def _add(txns: dict[int, dict[str, Any]], rev: int, key: str, ev: Any) -> None:
    """One watch event into the transaction of its revision: a put (the value decoded) or a
    delete."""
    t = txns.setdefault(rev, {"revision": rev, "puts": {}, "deletes": []})
    if type(ev).__name__ == "DeleteEvent":
        t["deletes"].append(key)
    else:
        t["puts"][key] = decode(ev.value)


def _failure(e: Exception, from_revision: int) -> str:
    name = type(e).__name__
    if "Compacted" in name:
        return (
            f"etcd's history was compacted after revision {from_revision}: the "
            "transactions of the run cannot be replayed"
        )
    return f"{name}: {e}"
