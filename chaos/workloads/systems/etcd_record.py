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

import contextlib
import secrets
import threading
import time
import types
from typing import Any

import etcd3.watch

from chaos.core.memory import trim
from chaos.workloads.systems.record_values import MAX_EVENTS, MAX_VALUE, decode, unread

# What the record may hold in the orchestrator's memory, estimated per event by :func:`cost`: a
# record that fills etcd's quota (128 MiB) of values chaos keeps would hold several times that as
# Python objects, and the orchestrator is held to 300 MB. Past it the record is cut, and says so.
MAX_RECORD_BYTES = 32 << 20
# an event's own objects (its transaction's dicts, its key, its revision) before its value
EVENT_OVERHEAD = 600
PART_COST = 80  # a decoded container, item or key, about

# python3-etcd3 0.13 no longer depends on six, but its watcher still calls six.itervalues when a
# watch stream ends (when the client closes), printing a NameError traceback from its thread
if not hasattr(etcd3.watch, "six"):
    etcd3.watch.six = types.SimpleNamespace(itervalues=lambda d: iter(d.values()))

SENTINEL = "~chaos-record-end"
__all__ = ["MAX_EVENTS", "MAX_RECORD_BYTES", "MAX_VALUE", "SENTINEL", "cost", "replay"]


# a watch that could not be set up in time (WatchTimedOut on a loaded machine) or that lost its
# connection is tried again, from the same revision up to the same end marker
ATTEMPTS = 3
MARKER_RETRY_PAUSE = 1.0
# the timeout of the client a replay is given: etcd3 waits this long for a watch to be set up,
# and at a load average of 50-70 on 2 cores, 3 s missed it three times in a row (WatchTimedOut)
CLIENT_TIMEOUT = 15.0


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
        if got.truncated:
            record["truncated_why"] = got.truncated_why
        if error is None or got.compacted:
            break
    # etcd's answers (up to MAX_ANSWER each, parsed by grpc and protobuf outside Python's own
    # heap) are freed now; without this their pages stayed the orchestrator's through the checks
    trim()
    return record


class _Collect:
    """One watch from ``from_revision`` until the end marker with ``nonce``."""

    def __init__(self, client: Any, prefix: str, from_revision: int, nonce: str) -> None:
        self.client, self.prefix, self.from_revision = client, prefix, from_revision
        self.sentinel, self.nonce = prefix + SENTINEL, nonce.encode()
        self.txns: dict[int, dict[str, Any]] = {}
        self.truncated = False
        self.truncated_why = ""
        self.held = 0  # the estimated bytes of what the record keeps (cost)
        self.compacted = False
        self.to_revision: int | None = None
        self.failure: list[str] = []
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.watch_id: Any = None
        self.count = 0

    def run(self, timeout: float) -> str | None:
        """The error that ended the watch, or None once the end marker arrived."""
        threading.Thread(target=self._watch, name="etcd-record", daemon=True).start()
        try:
            if not self.done.wait(timeout):
                return f"the replay did not reach the end marker within {timeout:g} s"
        finally:
            self._cancel()
        if self.failure:
            return self.failure[0]
        if self.to_revision is None:
            return "etcd ended the watch before the end marker"
        return None

    def _cancel(self) -> None:
        with self.lock:
            watch_id, self.watch_id = self.watch_id, None
            self.done.set()  # a late answer is dropped (_answer)
        if watch_id is not None:
            with contextlib.suppress(Exception):
                self.client.cancel_watch(watch_id)

    def _watch(self) -> None:
        # a callback, not the client's response iterator: that one queues every answer etcd
        # sends, unbounded (90 MB of a record's answers were held at once), while a callback
        # runs in the watch's own thread, so etcd's next answer waits for this one to be read
        try:
            watch_id = self.client.add_watch_prefix_callback(
                self.prefix, self._answer, start_revision=self.from_revision
            )
        except Exception as e:  # WatchTimedOut, RevisionCompactedError, a lost connection
            self._fail(e)
            return
        with self.lock:
            self.watch_id = watch_id
            late = self.done.is_set()
        if late:
            self._cancel()

    def _fail(self, e: BaseException | None) -> None:
        if e is None:
            self.failure.append("etcd ended the watch before the end marker")
        else:
            self.compacted = "Compacted" in type(e).__name__
            self.failure.append(_failure(e, self.from_revision))
        self.done.set()

    def _answer(self, response: Any) -> None:
        """One answer of etcd's watch (or the error that ended it), in the watch's thread."""
        if self.done.is_set():
            return
        if response is None or isinstance(response, BaseException):
            self._fail(response)
            return
        try:
            for ev in response.events:
                key = ev.key.decode("utf-8", errors="replace")
                rev = int(ev.mod_revision)
                if key == self.sentinel and ev.value == self.nonce:
                    self.to_revision = rev
                    self.done.set()
                    return
                # a marker with another value is the code under test's write (or an earlier
                # run's): it stays in the record, where checkers judge it
                self.count += 1
                if not self.truncated:
                    self._keep(self.count, rev, key, ev)
        except Exception as e:  # the client swallows what a callback raises: said here
            self._fail(e)

    def _keep(self, count: int, rev: int, key: str, ev: Any) -> None:
        """Keep one event, or cut the record at the first cap it passes (the events after a cut
        are read to the end marker, and dropped: their count and size do not matter)."""
        delete = type(ev).__name__ == "DeleteEvent"
        value = None if delete else decode(ev.value)
        self.held += cost(key, None if delete or unread(value) else ev.value)
        if count > MAX_EVENTS:
            self.truncated_why = f"{MAX_EVENTS} events"
        elif self.held > MAX_RECORD_BYTES:
            self.truncated_why = f"{MAX_RECORD_BYTES >> 20} MiB of values to hold (revision {rev})"
        else:
            t = self.txns.setdefault(rev, {"revision": rev, "puts": {}, "deletes": []})
            if delete:
                t["deletes"].append(key)
            else:
                t["puts"][key] = value
            return
        self.truncated = True


def cost(key: str, raw: bytes | None) -> int:
    """About how many bytes an event costs the orchestrator once decoded and kept: the value's
    bytes if kept (``raw`` is None for a delete or a value kept as a marker), and each of its
    containers and items as a Python object."""
    if raw is None or len(raw) > MAX_VALUE:
        return EVENT_OVERHEAD + len(key)
    parts = raw.count(b",") + raw.count(b":") + raw.count(b"[") + raw.count(b"{")
    return EVENT_OVERHEAD + len(key) + len(raw) + PART_COST * parts


def _failure(e: BaseException, from_revision: int) -> str:
    name = type(e).__name__
    if "Compacted" in name:
        return (
            f"etcd's history was compacted after revision {from_revision}: the "
            "transactions of the run cannot be replayed"
        )
    return f"{name}: {e}"
