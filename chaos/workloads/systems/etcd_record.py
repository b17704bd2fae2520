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
import time
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


# a watch that could not be set up in time (WatchTimedOut on a loaded machine) or that lost its
# connection is tried again, from the same revision up to the same end marker
ATTEMPTS = 3
MARKER_RETRY_PAUSE = 1.0


def replay(client: Any, prefix: str, from_revision: int, timeout: float = 10.0) -> dict[str, Any]:
    """Every transaction on keys under ``prefix`` from ``from_revision`` on, as JSON data:

    ``{"source": "etcd", "prefix", "from_revision", "to_revision", "txns": [{"revision",
    "puts": {key: value}, "deletes": [key]}], "error": str | None, "truncated": bool}``.

    One end marker, one nonce: a marker with another value would be a write under the prefix
    that no rule of the lab explains. A failed put is tried again with the same nonce, and a
    failed watch (``ATTEMPTS`` in all, each within ``timeout``), but not a compacted history,
    which no retry brings back.
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
    # the same nonce each try: a put that timed out yet landed is a marker the watch stops at
    # first, and the second one comes after it, outside the record
    for attempt in range(1, ATTEMPTS + 1):
        try:
            client.put(prefix + SENTINEL, nonce)
            break
        except Exception as e:
            if attempt == ATTEMPTS:
                record["error"] = f"could not write the end marker: {type(e).__name__}: {e}"
                return record
            time.sleep(MARKER_RETRY_PAUSE)
    for _ in range(ATTEMPTS):
        got = _Collect(client, prefix, from_revision, nonce)
        error = got.run(timeout)
        record.update(txns=[got.txns[r] for r in sorted(got.txns)], error=error,
                      truncated=got.truncated, to_revision=got.to_revision)  # fmt: skip
        if error is None or got.compacted:
            break
    return record


class _Collect:
    """One watch from ``from_revision`` until the end marker with ``nonce``."""

    def __init__(self, client: Any, prefix: str, from_revision: int, nonce: str) -> None:
        self.client, self.prefix, self.from_revision = client, prefix, from_revision
        self.sentinel, self.nonce = prefix + SENTINEL, nonce.encode()
        self.txns: dict[int, dict[str, Any]] = {}
        self.truncated = False
        self.compacted = False
        self.to_revision: int | None = None
        self.failure: list[str] = []
        self.done = threading.Event()

    def run(self, timeout: float) -> str | None:
        """The error that ended the watch, or None once the end marker arrived."""
        threading.Thread(target=self._watch, name="etcd-record", daemon=True).start()
        if not self.done.wait(timeout):
            return f"the replay did not reach the end marker within {timeout:g} s"
        if self.failure:
            return self.failure[0]
        if self.to_revision is None:
            return "etcd ended the watch before the end marker"
        return None

    def _watch(self) -> None:
        count = 0
        try:
            responses, cancel = self.client.watch_prefix_response(
                self.prefix, start_revision=self.from_revision
            )
            try:
                for response in responses:
                    for ev in response.events:
                        key = ev.key.decode("utf-8", errors="replace")
                        rev = int(ev.mod_revision)
                        if key == self.sentinel and ev.value == self.nonce:
                            self.to_revision = rev
                            return
                        # a marker with another value is the code under test's write (or an
                        # earlier run's): it stays in the record, where checkers judge it
                        count += 1
                        if count > MAX_EVENTS:
                            self.truncated = True
                            continue
                        _add(self.txns, rev, key, ev)
            finally:
                cancel()
        except Exception as e:  # RevisionCompactedError, a lost connection, WatchTimedOut
            self.compacted = "Compacted" in type(e).__name__
            self.failure.append(_failure(e, self.from_revision))
        finally:
            self.done.set()


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
