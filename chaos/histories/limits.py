"""Bounds on the inputs chaos reads, and the one error a malformed input turns into.

Histories, run folders and schedules come from anywhere: a student's run, a file found on the
web, a run folder the code under test wrote into. Whatever they hold, chaos answers with a verdict
or with one line ``FILE:LINE: field 'F': what is wrong`` (exit 3), never a traceback or a hang.
The parsers keep their own line-level reports; this module holds what sits around them: the
limits (nesting depth, file size, digits of an integer) and :func:`input_guard`, which turns what
a parser may still raise on hostile input (``RecursionError`` from a deep value somewhere past the
parser, ``MemoryError``, ``OverflowError``, ``ValueError``, ``UnicodeError``) into
:class:`InputError` naming the file and, when it can be found, the line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_CLAIM_FILES",
    "MAX_DEPTH",
    "MAX_EVENT_FILES",
    "MAX_INPUT_BYTES",
    "MAX_INT_DIGITS",
    "UNREAD",
    "VALUE_DEPTH",
    "InputError",
    "TooDeep",
    "check_depth",
    "check_size",
    "deep_line",
    "input_guard",
    "load_value",
    "loads_bounded",
    "nesting",
]

# Real histories nest a handful of levels (Jepsen's txn values: [:txn [[:append 1 2]]]); 100 is
# far beyond them and far below what Python's recursion limit lets the code after the parser walk.
MAX_DEPTH = 100
# Python refuses to convert longer decimal strings (CVE-2020-10735); a bound of its own, stated.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
# Files in a run's live/events: a lab writes one per node and component. 300,000 empty files make
# every poll of the tail take seconds; the Docker backend's tmpfs holds no more (nr_inodes),
# and the tail lists no further on any backend.
MAX_EVENT_FILES = 256
# Files in a run's live/claims: an in-process point's firing makes three (the claim, its answer,
# its release). The services can create files there; a flood stops at the kernel's ENOSPC (the
# Docker backend's tmpfs), and then a claim that cannot be made leaves its trigger silent: unknown.
MAX_CLAIM_FILES = 1024
# A million-op history is about 120 MB; the readers hold a file's ops in memory.
MAX_INPUT_BYTES = int(os.environ.get("CHAOS_MAX_INPUT_BYTES", str(1 << 30)))


class InputError(ValueError):
    """A file chaos cannot use; ``str()`` is the one line shown to the user."""

    def __init__(
        self, path: str | Path, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        self.path, self.line, self.field = str(path), line, field
        where = f"{path}:{line}" if line is not None else str(path)
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")


def check_size(path: Path, limit: int = MAX_INPUT_BYTES) -> None:
    """Refuse a file larger than ``limit`` before reading any of it."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the reader reports a missing or unreadable file in its own words
    if size > limit:
        raise InputError(
            path, f"{size} bytes, more than the {limit} chaos reads (CHAOS_MAX_INPUT_BYTES)"
        )


_OPEN = frozenset(b"[{(")
_CLOSE = frozenset(b"]})")
_BRACKETS = re.compile(rb'["\\\[\]{}()\n]')


def deep_line(data: bytes, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """The first line (1-based) where brackets nest deeper than ``limit``, and that depth, or
    None. Brackets inside strings do not count; EDN's ``#tag`` prefixes nest like brackets. Only
    used to *explain* a failure, so it may be slow: it looks at brackets and quotes only."""
    depth = 0
    line = 1
    in_str = False
    skip = -1  # offset of a character a backslash escaped
    tags = data.count(b"#")
    if data.count(b"[") + data.count(b"{") + data.count(b"(") + tags <= limit:
        return None
    for m in _BRACKETS.finditer(data):
        c = m.group()[0]
        start = m.start()
        if c == 0x0A:
            line += 1
            in_str = False  # a JSON line never continues a string; EDN's rarely matter here
            continue
        if start == skip:
            continue
        if in_str:
            if c == 0x5C:
                skip = start + 1
            elif c == 0x22:
                in_str = False
            continue
        if c == 0x22:
            in_str = True
        elif c in _OPEN:
            depth += 1
            if depth > limit:
                return line, depth
        elif c in _CLOSE:
            depth = max(0, depth - 1)
    if tags > limit:
        # a run of tags ("#a #a #a ... 1") nests without a bracket
        for no, text in enumerate(data.split(b"\n"), start=1):
            if text.count(b"#") > limit:
                return no, text.count(b"#")
    return None


_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
# JSON's brackets as steps of the depth: [ and { go in, ] and } come out, the rest is left out
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def nesting(data: bytes, limit: int = MAX_DEPTH) -> int:
    """How deep JSON ``data``'s brackets nest (strings left out), or 0 when it is plainly no
    deeper than ``limit`` (fewer brackets than that: the common case, one ``count`` in C). Never
    recursive, linear in the size: safe on whatever a solution wrote."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return 0
    brackets = _STRINGS.sub(b"", data).translate(_STEPS, _NOT_BRACKETS)
    depth = deepest = 0
    for step in brackets:
        depth = depth + 1 if step == 1 else max(0, depth - 1)
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest  # enough to refuse it: the rest need not be walked
    return deepest


class TooDeep(ValueError):
    """JSON nested deeper than a reader takes; ``str()`` says how deep."""


def loads_bounded(data: bytes | str, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` for data a solution made (an event line, a value it stored in etcd): a
    value nested deeper than ``limit`` raises :class:`TooDeep` (a ``ValueError``) before any
    parser recurses, so no ``RecursionError`` reaches the caller (a 30,000-deep event line once
    ended the orchestrator with exit 5)."""
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    depth = nesting(raw, limit)
    if depth > limit:
        raise TooDeep(f"values nest more than {limit} levels deep (chaos reads {limit})")
    try:
        return json.loads(raw)
    except RecursionError:  # the check above makes this unreachable; kept as a floor
        raise TooDeep(f"values nest deeper than chaos reads ({limit} levels)") from None


# A value a solution stored (in etcd, through a proxy's journal) nested deeper than this is kept
# as the reason only, ``{UNREAD: why}``, by every reader alike: lab values nest two or three
# levels, and a 3 KB value nested 1,500 deep held 90 KB of Python objects per revision (a record
# of such values took the orchestrator to 998 MB); a 2,000-deep one made every final read raise.
VALUE_DEPTH = 32
UNREAD = "chaos_unread"


def load_value(text: str) -> Any:
    """A stored value's JSON, or ``{UNREAD: why}`` when it nests past :data:`VALUE_DEPTH`;
    ``ValueError`` when it is not JSON."""
    try:
        return loads_bounded(text, VALUE_DEPTH)
    except TooDeep:
        return {UNREAD: f"nested more than {VALUE_DEPTH} levels deep"}


_CAUGHT = (RecursionError, MemoryError, OverflowError, ValueError, UnicodeError)


def _head(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path`` if it is a regular file (never waiting on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)


def check_depth(path: Path, data: bytes, limit: int = MAX_DEPTH) -> None:
    """Refuse ``data`` (the bytes of ``path``) where brackets nest deeper than ``limit``: a
    parser would recurse that deep (5,000 nested ``[`` once ended chaos with RecursionError)."""
    found = deep_line(data, limit)
    if found is not None:
        line, depth = found
        raise InputError(path, f"values nest {depth} levels deep; chaos reads {limit}", line=line)


def _why(path: Path, e: BaseException) -> InputError:
    if isinstance(e, InputError):
        return e
    head = _head(path, 64 << 20)
    found = deep_line(head) if isinstance(e, (RecursionError, MemoryError)) else None
    if found is not None:
        line, depth = found
        return InputError(
            path, f"values nest {depth} levels deep; chaos reads {MAX_DEPTH}", line=line
        )
    if isinstance(e, RecursionError):
        return InputError(path, f"values nest deeper than chaos reads ({MAX_DEPTH} levels)")
    if isinstance(e, MemoryError):
        return InputError(path, "reading it needs more memory than this machine gives chaos")
    if isinstance(e, UnicodeError):
        return InputError(path, "bytes that are not UTF-8")
    text = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    return InputError(path, f"cannot be read: {text}")


@contextlib.contextmanager
def input_guard(path: Path) -> Iterator[None]:
    """Run a parser of ``path``: what it raises on hostile input becomes :class:`InputError`."""
    try:
        yield
    except _CAUGHT as e:
        raise _why(path, e) from None
