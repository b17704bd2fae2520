"""Reading the services' event files while the run goes on.

Each service appends JSON lines to ``<live>/events/<node>-<component>.jsonl`` stamped with
CLOCK_MONOTONIC; the tail converts them to run time and hands them to whoever waits (nemesis
triggers, recovery checks). Polling is cheap here: the files live on the host's disk.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.histories.jsonl import EVENTS_FORMAT, JsonlWriter
from chaos.histories.ops import Event


def to_event(raw: dict[str, Any], origin: float) -> Event:
    return Event.from_raw(raw, origin)


class EventTail:
    """Incrementally reads every events file under ``<live>/events``."""

    def __init__(self, live: Path, origin: float) -> None:
        self._dir = live / "events"
        self._origin = origin
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self._cond = threading.Condition(self._lock)

    def poll(self) -> list[Event]:
        new: list[Event] = []
        with self._lock:
            if not self._dir.exists():
                return new
            for path in sorted(self._dir.glob("*.jsonl")):
                off = self._offsets.get(path, 0)
                try:
                    with open(path, "rb") as fh:
                        fh.seek(off)
                        chunk = fh.read()
                except FileNotFoundError:
                    continue
                if not chunk:
                    continue
                self._offsets[path] = off + len(chunk)
                data = self._partial.pop(path, b"") + chunk
                lines = data.split(b"\n")
                if lines[-1]:
                    self._partial[path] = lines[-1]
                for line in lines[:-1]:
                    if not line.strip():
                        continue
                    try:
                        new.append(to_event(json.loads(line), self._origin))
                    except (ValueError, KeyError, TypeError):
                        continue  # a service died mid-line; the merge at the end reports it
            new.sort(key=lambda e: e.time)
            self.events.extend(new)
            if new:
                self._cond.notify_all()
        return new

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def wait_for(
        self, pred: Callable[[Event], bool], timeout: float, stop: threading.Event | None = None
    ) -> Event | None:
        """Poll until an event matching ``pred`` arrives (looking at events seen from now on)."""
        with self._lock:
            seen = len(self.events)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (stop and stop.is_set()):
            self.poll()
            with self._lock:
                fresh = self.events[seen:]
                seen = len(self.events)
            for e in fresh:
                if pred(e):
                    return e
            time.sleep(0.01)
        return None

    def merge_to(self, path: Path) -> int:
        """Write every event, sorted by time, as ``events.jsonl``. Returns the count."""
        self.poll()
        events = sorted(self.snapshot(), key=lambda e: e.time)
        w = JsonlWriter(path, EVENTS_FORMAT)
        try:
            for e in events:
                w.write(e.to_json())
        finally:
            w.close()
        return len(events)
