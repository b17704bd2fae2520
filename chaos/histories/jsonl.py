"""Append-only JSONL files for histories and events: the writer, and the readers' entry points.

Written line by line and flushed as ops happen, so a run killed at any moment leaves every
completed line on disk. Reading goes through the one reader, :mod:`chaos.histories.reader`,
which reports a broken line (with its number) instead of raising, and treats a truncated last
line as the trace of a writer that died mid-write.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from chaos.histories.ops import Event, Op
from chaos.histories.reader import (
    EVENTS,
    EVENTS_FORMAT,
    FORMAT_VERSION,
    HISTORY,
    HISTORY_FORMAT,
    LineProblem,
    Loaded,
    raw_events,
    read_records,
)

__all__ = [
    "EVENTS_FORMAT",
    "FORMAT_VERSION",
    "HISTORY_FORMAT",
    "HistoryRecorder",
    "JsonlWriter",
    "LineProblem",
    "Loaded",
    "read_events",
    "read_history",
    "read_raw_events",
]


class JsonlWriter:
    """Thread-safe line writer: one JSON object per line, flushed (and optionally fsynced) each time.

    The first line is a header naming the format and its version, so a reader can refuse a file
    from a future version with a clear message.
    """

    def __init__(self, path: Path, fmt: str, *, fsync: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()
        self._fsync = fsync
        if self._fh.tell() == 0:
            self.write({"format": fmt, "version": FORMAT_VERSION})

    def write(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            if self._fh.closed:
                return
            self._fh.write(line)
            self._fh.flush()
            if self._fsync:
                os.fsync(self._fh.fileno())

    def flush_durably(self) -> None:
        """fsync what was written so far (the orchestrator does at each phase boundary)."""
        with self._lock:
            if not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


# what the orchestrator's tail reads of a run's events (chaos.core.live.MAX_EVENT_BYTES): the
# raw files of a run cut short are read no further, whatever the code under test left there
RAW_EVENTS_BYTES = 32 << 20


def read_raw_events(folder: Path, origin: float) -> Loaded[Event]:
    """The services' own event files (a run whose orchestrator died before merging them), up to
    ``RAW_EVENTS_BYTES`` in all (by their sizes, before reading); a file past it is a problem."""
    records: list[Event] = []
    problems: list[LineProblem] = []
    fmt = raw_events(origin)
    left = RAW_EVENTS_BYTES
    for path in sorted(folder.glob("*.jsonl")):
        try:
            size = path.lstat().st_size
        except OSError:
            continue
        if size > left:
            problems.append(
                LineProblem(str(path), 1, f"not read: past {RAW_EVENTS_BYTES} bytes of events")
            )
            continue
        left -= size
        loaded = read_records(path, fmt)
        records += loaded.records
        problems += loaded.problems
    return Loaded(sorted(records, key=lambda e: e.time), problems)


def read_history(path: Path) -> Loaded[Op]:
    return read_records(path, HISTORY)


def read_events(path: Path) -> Loaded[Event]:
    return read_records(path, EVENTS)


class HistoryRecorder:
    """Gives ops their index and time, writes them as they happen, and keeps them in memory."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self._writer = JsonlWriter(path, HISTORY_FORMAT)
        self._clock = clock
        self._lock = threading.Lock()
        self.ops: list[Op] = []

    def record(self, **fields: Any) -> Op:
        with self._lock:
            op = Op(index=len(self.ops), time=self._clock(), **fields)
            self.ops.append(op)
            self._writer.write(op.to_json())
            return op

    def sync(self) -> None:
        """Make every op recorded so far durable (fsync)."""
        self._writer.flush_durably()

    def close(self) -> None:
        self._writer.close()

    def __iter__(self) -> Iterator[Op]:
        return iter(list(self.ops))
