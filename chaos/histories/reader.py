"""The one reader of chaos's JSON Lines files (``history.jsonl``, ``events.jsonl``).

Every consumer — ``read_history`` (Op records), the checkers' lean rows, the report's tuples,
``chaos check`` — reads through :func:`read_blocks`; they differ only in the record a line
becomes (a :class:`LineFormat`). The rules (docs/history-format.md):

* The first line may be a header naming the format and its version; a file of another format, or
  of a version newer than this chaos understands, is reported (upgrade chaos) and its lines read.
* A line that is not JSON, not an object, or lacks a required field is reported with its file and
  line number and skipped; an unterminated last line that does not read is reported as
  *truncated* (the writer died mid-write). Nothing raises but ``OSError``.

Speed: blocks of about 2 MB of whole lines go to msgspec in one call, in C — straight into typed
records (:class:`OpLine`), or into dicts that the format turns into records. A block with any line
msgspec or the format will not take (a broken line, a header, a value JSON allows and msgspec
does not) is read again line by line with the standard library, which names each bad line; that
path alone decides what a line means, so both paths accept the same lines with the same values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import msgspec

from chaos.histories.files import open_input
from chaos.histories.limits import MAX_INPUT_BYTES
from chaos.histories.ops import Event, Op, OpType, op_fields

__all__ = [
    "BLOCK_BYTES",
    "EVENTS",
    "EVENTS_FORMAT",
    "FORMAT_VERSION",
    "HISTORY",
    "HISTORY_FORMAT",
    "OP_LINES",
    "LineFormat",
    "LineProblem",
    "Loaded",
    "OpLine",
    "dict_blocks",
    "raw_events",
    "read_blocks",
    "read_records",
]

HISTORY_FORMAT = "chaos.history"
EVENTS_FORMAT = "chaos.events"
FORMAT_VERSION = 1

# Bytes of whole lines handed to msgspec at once: large enough that the per-call cost vanishes,
# small enough that one broken line costs a short line-by-line pass.
BLOCK_BYTES = 2 << 20

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line a reader could not use. ``truncated`` marks an unterminated last line; ``kind``
    names the problem in its text ("bad line", "malformed history"); ``line`` 0: not known."""

    path: str
    line: int
    message: str
    truncated: bool = False
    kind: str = "bad line"

    def __str__(self) -> str:
        what = "truncated last line" if self.truncated else self.kind
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {what}: {self.message}"


@dataclass(frozen=True, slots=True)
class Loaded(Generic[T]):
    records: list[T]
    problems: list[LineProblem]


_DICTS = msgspec.json.Decoder()
# what msgspec raises for a block it will not take, and what a format's parse raises for a line
_BLOCK_ERRORS = (
    msgspec.DecodeError,
    KeyError,
    ValueError,
    TypeError,
    AttributeError,
    OverflowError,
    RecursionError,  # msgspec on a value nested past its depth limit
)


def dict_blocks(parse: Callable[[dict[str, Any]], T]) -> Callable[[bytes], list[T]]:
    """A block decoder for a record built from a line's object: msgspec gives the dicts (faster
    than ``json.loads`` line by line), ``parse`` the records; any failure raises."""

    def decode(block: bytes) -> list[T]:
        return [parse(d) for d in _DICTS.decode_lines(block)]

    return decode


@dataclass(frozen=True, slots=True)
class LineFormat(Generic[T]):
    """How the lines of one file kind become records.

    ``name``: the header's ``format`` (``""``: files that carry no header, the services' raw
    event files). ``parse``: one line's object → a record; raises ``KeyError`` for a missing
    field, ``ValueError``, ``TypeError`` or ``OverflowError`` for an invalid one, and must not
    raise anything else. ``block``: many whole lines → their records, the same ones ``parse``
    would give, raising for any line it will not take; None reads line by line only.
    """

    name: str
    parse: Callable[[dict[str, Any]], T]
    block: Callable[[bytes], list[T]] | None = None


class OpLine(msgspec.Struct, gc=False, frozen=True):
    """A history line as the counting checkers need it: no ``extra``, no ``Op`` (a million of
    these are built; ``gc=False``: they hold no cycles for the collector to look for)."""

    index: int
    time: float
    process: int | str
    type: Literal["invoke", "ok", "fail", "info"]
    f: str
    value: Any = None
    error: Any = None

    @staticmethod
    def from_json(d: dict[str, Any]) -> OpLine:
        index, time, process, t, f, value, error = op_fields(d)
        return OpLine(index, time, process, t, f, value, error)  # type: ignore[arg-type]


class _PlainOpLine(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A history line with Jepsen's seven fields and nothing else, typed as :class:`Op` keeps
    them: msgspec takes a subset of what :func:`~chaos.histories.ops.op_fields` takes, with the
    same values (an int index, a number time, a process that is an int or a string, a known
    type, a string f and error). A line with any other field keeps it in ``Op.extra``, which
    only the dict path does."""

    index: int
    time: float
    process: int | str
    type: OpType
    f: str
    value: Any = None
    error: str | None = None


_PLAIN_OP_LINES = msgspec.json.Decoder(_PlainOpLine).decode_lines
_OP_DICTS = dict_blocks(Op.from_json)


def _op_blocks(block: bytes) -> list[Op]:
    """A block of history lines as ops: typed by msgspec when every line is plain (a client
    op: 4x faster than dicts), else through dicts; raises for a block neither takes."""
    try:
        plain = _PLAIN_OP_LINES(block)
    except msgspec.DecodeError:  # and ValidationError: an extra field, an odd value
        return _OP_DICTS(block)
    return [
        Op(
            index=o.index,
            time=o.time,
            process=o.process,
            type=o.type,
            f=o.f,
            value=o.value,
            error=o.error,
        )
        for o in plain
    ]


HISTORY: LineFormat[Op] = LineFormat(HISTORY_FORMAT, Op.from_json, _op_blocks)
EVENTS: LineFormat[Event] = LineFormat(EVENTS_FORMAT, Event.from_json, dict_blocks(Event.from_json))
# msgspec checks the typed fields itself (an int index, a known type, ...) and accepts a subset of
# what op_fields accepts, with the same values; anything else goes line by line.
OP_LINES: LineFormat[OpLine] = LineFormat(
    HISTORY_FORMAT, OpLine.from_json, msgspec.json.Decoder(OpLine).decode_lines
)


def raw_events(origin: float) -> LineFormat[Event]:
    """The services' own event files: ``mono`` (CLOCK_MONOTONIC) placed on the run's clock."""

    def parse(d: dict[str, Any]) -> Event:
        return Event.from_raw(d, origin)

    return LineFormat("", parse, dict_blocks(parse))


def _header_problem(obj: dict[str, Any], fmt: str, name: str, no: int) -> LineProblem | None:
    if obj["format"] != fmt:
        return LineProblem(name, no, f"format {obj['format']!r}, expected {fmt!r}")
    if not isinstance(obj["version"], int) or obj["version"] > FORMAT_VERSION:
        return LineProblem(
            name,
            no,
            f"format version {obj['version']!r} is newer than this chaos understands "
            f"({FORMAT_VERSION}); upgrade chaos",
        )
    return None


def _by_line(
    lines: list[bytes],
    first_no: int,
    last_unterminated: bool,
    fmt: LineFormat[T],
    name: str,
    problems: list[LineProblem],
) -> list[T]:
    """The reference path: each line on its own, each problem with its line number."""
    records: list[T] = []
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        no = first_no + i
        truncated = last_unterminated and i == last
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            problems.append(LineProblem(name, no, f"not JSON ({e})", truncated))
            continue
        except RecursionError:
            problems.append(LineProblem(name, no, "values nest too deep to read", truncated))
            continue
        if not isinstance(obj, dict):
            problems.append(LineProblem(name, no, "not a JSON object", truncated))
            continue
        if "format" in obj and "version" in obj and "type" not in obj and "kind" not in obj:
            problem = _header_problem(obj, fmt.name, name, no)
            if problem is not None:
                problems.append(problem)
            continue
        try:
            records.append(fmt.parse(obj))
        except (KeyError, ValueError, TypeError, OverflowError) as e:  # an index of 1e400
            field = e.args[0] if isinstance(e, KeyError) else str(e)
            msg = f"missing field {field!r}" if isinstance(e, KeyError) else f"invalid: {field}"
            problems.append(LineProblem(name, no, msg, truncated))
    return records


def read_blocks(path: Path, fmt: LineFormat[T], problems: list[LineProblem]) -> Iterator[list[T]]:
    """The records of ``path``, a block at a time (a consumer that keeps less than the records,
    as the checkers' rows do, never holds them all); problems are appended as they are found."""
    name = str(path)
    with open_input(path, MAX_INPUT_BYTES) as fh:
        # The first line on its own: it is the header, which no block decoder takes.
        first = fh.readline()
        if first:
            unterminated = not first.endswith(b"\n")
            yield _by_line([first.rstrip(b"\n")], 1, unterminated, fmt, name, problems)
        no = 1  # lines consumed so far
        tail = b""
        while True:
            more = fh.read(BLOCK_BYTES)
            buf = tail + more
            if more:
                cut = buf.rfind(b"\n") + 1
                block, tail = buf[:cut], buf[cut:]
                if not block:
                    continue
            else:
                block, tail = buf, b""
                if not block:
                    return
            unterminated = not block.endswith(b"\n")
            records: list[T] | None = None
            if fmt.block is not None:
                try:
                    records = fmt.block(block)
                except _BLOCK_ERRORS:
                    records = None
            if records is None:
                lines = block.split(b"\n")
                if not unterminated:
                    lines.pop()
                records = _by_line(lines, no + 1, unterminated, fmt, name, problems)
            no += block.count(b"\n") + unterminated
            yield records
            if not more:
                return


def read_records(path: Path, fmt: LineFormat[T]) -> Loaded[T]:
    """Every record of ``path`` and the problems of its unreadable lines."""
    records: list[T] = []
    problems: list[LineProblem] = []
    for block in read_blocks(path, fmt, problems):
        records += block
    return Loaded(records, problems)
