"""Deliveries in flight on a node, as its root-owned NATS proxy saw them: the gate of a read point
that fires only while the reading node is handling a delivery (lab3's).

Why: a read point held the first read of its group. A thread of the code under test that reads
the counter every 20 ms took that one firing between deliveries, when no check was near, and
check-then-act's bug stayed hidden (issue 29). A real check-then-act reads while it handles a
delivery: the broker delivered a message to the node's worker and the worker has not ended it.
The NATS proxy sees both ends of that (chaos's vantage point, not the solution's word), so the
etcd proxy of the same node asks it before a gated read fires: a decoy read between deliveries no
longer takes the firing, and a decoy read during one fires at the right time (the real read is
then held with it, chaos.node.proxy_points).

The two proxies share a file, ``deliveries.json`` in the NATS proxy's state folder (root's, 0700:
the service user can neither read nor write it), rewritten whole (a rename) at each change::

    {"deliveries": [{"subject": "$JS.ACK.TASKS.workers.1.5.5.…", "mono": 812.4}, …]}

A delivery is in flight from the moment the proxy forwards its ``MSG``/``HMSG`` to the client
until the client publishes to its ACK subject anything but ``+WPI`` (``+ACK``, ``+NXT``,
``+TERM``, ``-NAK``, an empty body), or its connection closes (a killed worker). A reader counts
it for at most ``within`` seconds after it was delivered (the workload's AckWait: the broker takes
the message back then), and a ``+WPI`` does not extend that: a client cannot keep the gate open
by holding one delivery and asking for more time.

Standard library only: runs on the nodes, as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

FILE = "deliveries.json"
# a client that takes deliveries and never ends them grows nothing past this: the oldest go first
# (the newest deliveries are the ones a gate asks about)
MAX_OPEN = 1024
# a file of MAX_OPEN entries with long subjects stays well under this
MAX_BYTES = 1 << 20


class InFlight:
    """The NATS proxy's record (one per proxy; called from its event loop only)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._clock = clock
        # ack subject -> (the client's TCP port, when it was delivered), oldest first
        self._open: dict[str, tuple[int, float]] = {}
        self._write()

    def delivered(self, subject: str, port: int) -> None:
        """The proxy forwards a delivery whose reply subject is ``subject`` to ``port``'s client
        (called before the client can have it)."""
        self._open.pop(subject, None)  # a redelivery on the same subject is delivered anew
        self._open[subject] = (port, self._clock())
        while len(self._open) > MAX_OPEN:
            del self._open[next(iter(self._open))]
        self._write()

    def ended(self, subject: str) -> None:
        """The client published ``subject`` an answer that ends the delivery."""
        if self._open.pop(subject, None) is not None:
            self._write()

    def closed(self, port: int) -> None:
        """``port``'s connection is gone: its deliveries are no one's now."""
        gone = [s for s, (p, _) in self._open.items() if p == port]
        for s in gone:
            del self._open[s]
        if gone:
            self._write()

    def _write(self) -> None:
        body = {"deliveries": [{"subject": s, "mono": t} for s, (_, t) in self._open.items()]}
        tmp = self._path.with_name(f".{self._path.name}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(body, fh, separators=(",", ":"))
            os.replace(tmp, self._path)
        except OSError:
            # a record not rewritten would say what is no longer so: none at all keeps the
            # gate shut (the point never fires, the run is unknown), and the broker's traffic
            # goes on
            with contextlib.suppress(OSError):
                os.unlink(self._path)


@dataclass(frozen=True, slots=True)
class Gate:
    """A point that fires only while the node has a delivery in flight: the NATS proxy's file,
    the ACK subject prefixes of the deliveries that count (a consumer's), and how long after its
    delivery one counts (None: until it ends)."""

    file: Path
    acks: tuple[str, ...]
    within: float | None = None

    def delivery(self, now: float | None = None) -> str | None:
        """The ACK subject of the newest delivery in flight that counts, or None: none, or the
        file missing or unreadable (the gate stays shut: a point that never fires makes the run
        unknown, never valid)."""
        now = time.monotonic() if now is None else now
        try:
            with open(self.file, "rb") as fh:
                entries = json.loads(fh.read(MAX_BYTES)).get("deliveries")
        except (OSError, ValueError, AttributeError):
            return None
        found: tuple[float, str] | None = None
        for e in entries if isinstance(entries, list) else []:
            subject, mono = (e.get("subject"), e.get("mono")) if isinstance(e, dict) else (0, 0)
            if not isinstance(subject, str) or not isinstance(mono, int | float):
                continue
            if not subject.startswith(self.acks):
                continue
            if self.within is not None and now - mono >= self.within:
                continue
            if found is None or mono > found[0]:
                found = (float(mono), subject)
        return None if found is None else found[1]


def gate(spec: object) -> Gate | None:
    """The arming's ``during`` (``{"file": ..., "acks": [...], "within": s}``), or None when it
    has none or it is malformed (then the arming is refused whole: see proxy_points)."""
    if not isinstance(spec, dict):
        return None
    file, acks, within = spec.get("file"), spec.get("acks"), spec.get("within")
    if not isinstance(file, str) or not file.startswith("/"):
        return None
    prefixes = tuple(a for a in acks if isinstance(a, str) and a) if isinstance(acks, list) else ()
    if not prefixes:
        return None
    if isinstance(within, bool) or not isinstance(within, int | float | None):
        return None
    return Gate(Path(file), prefixes, None if within is None else float(within))


def as_spec(file: str, acks: Sequence[str], within: float | None) -> dict[str, object]:
    """The arming's ``during`` for :func:`gate` (the orchestrator writes it)."""
    return {"file": file, "acks": list(acks), "within": within}
