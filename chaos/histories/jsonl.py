"""Append-only JSONL files for histories and events.

Written line by line and flushed as ops happen, so a run killed at any moment leaves every
completed line on disk; readers report a broken line (with its number) instead of raising, and
treat a truncated last line as the trace of a writer that died mid-write.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from chaos.histories.ops import Event, Op

HISTORY_FORMAT = "chaos.history"
EVENTS_FORMAT = "chaos.events"
FORMAT_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line a reader could not use. ``truncated`` marks an unterminated last line."""

    path: str
    line: int
    message: str
    truncated: bool = False

    def __str__(self) -> str:
        what = "truncated last line" if self.truncated else "bad line"
        return f"{self.path}:{self.line}: {what}: {self.message}"


@dataclass(frozen=True, slots=True)
class Loaded(Generic[T]):
    records: list[T]
    problems: list[LineProblem]


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


def _read(path: Path, parse: Callable[[dict[str, Any]], T], fmt: str) -> Loaded[T]:
    records: list[T] = []
    problems: list[LineProblem] = []
    name = str(path)
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    # A file that ends with "\n" splits into a final empty element; anything else there is a
    # line the writer never finished.
    last = len(lines) - 1
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        truncated = i - 1 == last
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            problems.append(LineProblem(name, i, f"not JSON ({e})", truncated))
            continue
        if not isinstance(obj, dict):
            problems.append(LineProblem(name, i, "not a JSON object", truncated))
            continue
        if "format" in obj and "version" in obj and "type" not in obj and "kind" not in obj:
            if obj["format"] != fmt:
                problems.append(LineProblem(name, i, f"format {obj['format']!r}, expected {fmt!r}"))
            elif not isinstance(obj["version"], int) or obj["version"] > FORMAT_VERSION:
                problems.append(
                    LineProblem(
                        name,
                        i,
                        f"format version {obj['version']!r} is newer than this chaos "
                        f"understands ({FORMAT_VERSION}); upgrade chaos",
                    )
                )
            continue
        try:
            records.append(parse(obj))
        except (KeyError, ValueError, TypeError) as e:
            field = e.args[0] if isinstance(e, KeyError) else str(e)
            msg = f"missing field {field!r}" if isinstance(e, KeyError) else f"invalid: {field}"
            problems.append(LineProblem(name, i, msg, truncated))
    return Loaded(records, problems)


def read_raw_events(folder: Path, origin: float) -> Loaded[Event]:
    """The services' own event files (a run whose orchestrator died before merging them)."""
    records: list[Event] = []
    problems: list[LineProblem] = []
    for path in sorted(folder.glob("*.jsonl")):
        loaded = _read(path, lambda d: Event.from_raw(d, origin), "")
        records += loaded.records
        problems += loaded.problems
    return Loaded(sorted(records, key=lambda e: e.time), problems)


def read_history(path: Path) -> Loaded[Op]:
    return _read(path, Op.from_json, HISTORY_FORMAT)


def read_events(path: Path) -> Loaded[Event]:
    return _read(path, Event.from_json, EVENTS_FORMAT)


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
