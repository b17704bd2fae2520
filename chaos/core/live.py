"""Reading the services' event files while the run goes on.

Each service appends JSON lines to ``<live>/events/<node>-<component>.jsonl`` stamped with
CLOCK_MONOTONIC; the tail converts them to run time and hands them to whoever waits (nemesis
triggers, recovery checks). Polling is cheap here: the files live on the host's disk.

The events folder is writable by the code under test, so what is there is narration, never
evidence a verdict rests on, and it is read defensively: only regular files (a planted link, FIFO
or device is skipped and noted), lines of at most ``LINE_CAP`` bytes, and per run at most
``MAX_EVENTS`` events and ``MAX_EVENT_BYTES`` bytes in at most ``MAX_EVENT_FILES`` files, each
line nested at most ``MAX_DEPTH`` levels (a deeper one is skipped and noted, never parsed): the events are held in memory (triggers wait
on them by index) and written to ``events.jsonl``, so the orchestrator's memory and the store's
disk follow these caps, never what a service writes. Past a cap the tail reads no more and says so
in :attr:`EventTail.over_quota`; the run is then ``unknown`` (its narration was cut).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.histories.files import UnsafeFile, fsync_dir, read_regular
from chaos.histories.growing import GrowingLines
from chaos.histories.jsonl import EVENTS_FORMAT, JsonlWriter
from chaos.histories.limits import MAX_EVENT_FILES, TooDeep, loads_bounded
from chaos.histories.ops import Event

LINE_CAP = 64 << 10
POLL_CAP = 8 << 20  # read per file per poll, so one flooded file cannot stall the tail
# A lab run reports a few thousand events; an event held costs about 800 bytes of memory.
MAX_EVENTS = int(os.environ.get("CHAOS_MAX_EVENTS", "100000"))
MAX_EVENT_BYTES = int(os.environ.get("CHAOS_MAX_EVENT_BYTES", str(32 << 20)))


def to_event(raw: dict[str, Any], origin: float) -> Event:
    return Event.from_raw(raw, origin)


class EventTail:
    """Incrementally reads every events file under ``<live>/events``."""

    def __init__(
        self,
        live: Path,
        origin: float,
        *,
        max_events: int = MAX_EVENTS,
        max_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self._dir = live / "events"
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._read = 0  # bytes read from every file together
        # why the tail stopped reading (a cap reached), or None
        self.over_quota: str | None = None
        self._origin = origin
        self._lines: GrowingLines[Path] = GrowingLines(LINE_CAP)
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self._cond = threading.Condition(self._lock)
        self.problems: list[str] = []
        self._noted: set[str] = set()

    def _note(self, key: str, message: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.problems.append(message)

    def _over(self, why: str) -> None:
        if self.over_quota is None:
            self.over_quota = f"the code under test wrote more than {why}; the rest was not read"
            self._note("quota", self.over_quota)

    def _files(self) -> list[Path]:
        """The event files, listed no further than :data:`MAX_EVENT_FILES` entries: a folder
        flooded with files costs each poll that many, and past it the tail stops, saying so."""
        names: list[str] = []
        try:
            with os.scandir(self._dir) as entries:
                for n, entry in enumerate(entries):
                    if n >= MAX_EVENT_FILES:
                        self._over(f"{MAX_EVENT_FILES} files in live/events")
                        return []
                    if entry.name.endswith(".jsonl"):
                        names.append(entry.name)
        except OSError:
            return []
        return [self._dir / name for name in sorted(names)]

    def poll(self) -> list[Event]:
        new: list[Event] = []
        with self._lock:
            if self.over_quota is not None or not self._dir.exists():
                return new
            for path in self._files():
                left = self._max_bytes - self._read
                try:
                    chunk = read_regular(path, min(POLL_CAP, left + 1), self._lines.offset(path))
                except UnsafeFile as e:
                    self._note(f"unsafe:{path.name}", f"{path.name}: skipped, {e.strerror}")
                    continue
                except FileNotFoundError:
                    continue
                if not chunk:
                    continue
                if len(chunk) > left:
                    self._over(f"{self._max_bytes} bytes of events (CHAOS_MAX_EVENT_BYTES)")
                    break
                self._read += len(chunk)
                lines, overlong = self._lines.feed(path, chunk)
                if overlong:
                    self._note(f"line:{path.name}", f"{path.name}: a line over {LINE_CAP} bytes")
                for line in lines:
                    if not line.strip() or len(line) > LINE_CAP:
                        continue
                    if len(self.events) + len(new) >= self._max_events:
                        self._over(f"{self._max_events} events (CHAOS_MAX_EVENTS)")
                        break
                    try:
                        new.append(to_event(loads_bounded(line), self._origin))
                    except TooDeep as e:
                        self._note(f"deep:{path.name}", f"{path.name}: a line skipped, {e}")
                    except (ValueError, KeyError, TypeError):
                        continue  # a service died mid-line; the merge at the end reports it
                if self.over_quota is not None:
                    break
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
        """Write every event, sorted by time, as ``events.jsonl``. Returns the count.

        Written aside and renamed: a merge cut short (the orchestrator killed) leaves the
        previous file or none, never a prefix that reads as a shorter, valid run."""
        self.poll()
        events = sorted(self.snapshot(), key=lambda e: e.time)
        tmp = path.with_name(f".{path.name}.merging")
        tmp.unlink(missing_ok=True)
        w = JsonlWriter(tmp, EVENTS_FORMAT)
        try:
            for e in events:
                w.write(e.to_json())
            w.flush_durably()
        finally:
            w.close()
        os.replace(tmp, path)
        fsync_dir(path.parent)
        with self._lock:
            # the stored file is what the checkers read: the tail's copy is not needed any more
            self.events = []
        return len(events)
