"""EDN for chaos: values (read and written) and Jepsen histories (``history.edn``).

The grammar is read by :mod:`chaos.histories.edn_reader` (``read_form``, ``loads``,
``read_edn_forms``), into the types of :mod:`chaos.histories.edn_types`, re-exported here; this
module writes values back (:func:`dumps`) and reads and writes histories.

A history file is read as a Clojure reader would read it, then taken as ops: either one vector or
list holding op maps (``[{…} {…}]``, ``({…} {…})``) or op maps one after another, with comments,
discards (``#_``), commas and line breaks anywhere, maps spread over any lines, and ops written as
records (``#jepsen.history.Op{…}``). Jepsen writes one op per line; blocks of such lines take a
fast path (:mod:`chaos.histories.edn_fast`: rewritten as JSON and decoded by msgspec), and
everything else the general reader, form by form, across block boundaries. Both give the same
ops (a property test proves it). A form that is not EDN, or not an op, is reported with its line
(:class:`LineProblem`); a cut-off last form (the writer died) is marked ``truncated``. Times are
nanoseconds in EDN and seconds in chaos; a time with at most nanosecond precision survives
``read(write(h))``.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, overload

from chaos.histories.edn_fast import ops_from_block
from chaos.histories.edn_reader import (
    is_keyword_name,
    iter_forms,
    loads,
    read_edn_forms,
    read_form,
    skip_space,
    unescape,
)
from chaos.histories.edn_types import (
    Char,
    EdnError,
    EdnList,
    FrozenMap,
    Keyword,
    Symbol,
    Tagged,
)
from chaos.histories.files import open_input
from chaos.histories.jsonl import LineProblem
from chaos.histories.limits import MAX_INPUT_BYTES, MAX_INT_DIGITS
from chaos.histories.ops import NEMESIS, Op, OpType

__all__ = [
    "Char",
    "EdnError",
    "EdnList",
    "FrozenMap",
    "History",
    "Keyword",
    "OpLines",
    "Symbol",
    "Tagged",
    "dumps",
    "iter_forms",
    "loads",
    "op_from_edn",
    "op_to_edn",
    "read_edn_forms",
    "read_form",
    "read_history",
    "read_history_lines",
    "read_history_text",
    "write_history",
]


# ---------------------------------------------------------------- writing


def _dump_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_SAFE_STR = re.compile(r'[^"\\\x00-\x1f\x7f\ud800-\udfff]*')


_CHAR_NAMES = {
    "\n": "newline",
    " ": "space",
    "\t": "tab",
    "\r": "return",
    "\f": "formfeed",
    "\b": "backspace",
}


def _dump_char(c: str) -> str:
    if c in _CHAR_NAMES:
        return "\\" + _CHAR_NAMES[c]
    if len(c) == 1 and c.isprintable() and not c.isspace() and ord(c) <= 0xFFFF:
        return "\\" + c
    return f"\\u{ord(c[:1] or ' '):04x}"


def _dump(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("nil")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, Tagged):
        out.append(str.__str__(v))
    elif isinstance(v, Keyword):
        out.append(":" + v if is_keyword_name(v) else _dump_str(v))
    elif isinstance(v, Symbol):
        out.append(str.__str__(v))
    elif isinstance(v, Char):
        out.append(_dump_char(str.__str__(v)))
    elif isinstance(v, str):
        out.append(f'"{v}"' if _SAFE_STR.fullmatch(v) else _dump_str(v))
    elif isinstance(v, int):
        out.append(str(int(v)))
    elif isinstance(v, float):
        if math.isnan(v):
            out.append("##NaN")
        elif math.isinf(v):
            out.append("##Inf" if v > 0 else "##-Inf")
        else:
            out.append(repr(v))
    elif isinstance(v, Fraction):
        out.append(f"{v.numerator}/{v.denominator}")
    elif isinstance(v, Decimal) and v.is_finite():
        out.append(f"{v}M")
    elif isinstance(v, (list, tuple)):
        lst = isinstance(v, EdnList)
        out.append("(" if lst else "[")
        for i, x in enumerate(v):
            if i:
                out.append(" ")
            _dump(x, out)
        out.append(")" if lst else "]")
    elif isinstance(v, dict):
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(", ")
            _dump(k, out)
            out.append(" ")
            _dump(x, out)
        out.append("}")
    elif isinstance(v, (set, frozenset)):
        out.append("#{")
        for i, x in enumerate(v):
            if i:
                out.append(" ")
            _dump(x, out)
        out.append("}")
    else:
        out.append(_dump_str(str(v)))


def dumps(value: Any) -> str:
    """Write ``value`` as EDN. Strings stay strings; only :class:`Keyword` values become keywords."""
    out: list[str] = []
    _dump(value, out)
    return "".join(out)


# ---------------------------------------------------------------- histories

_KNOWN = ("index", "time", "type", "process", "f", "value", "error")


def op_to_edn(op: Op) -> str:
    """One op as an EDN map with Jepsen's keys; ``time`` in integer nanoseconds."""
    parts = [
        f"{{:index {op.index}",
        f":time {round(op.time * 1e9)}",
        f":type :{op.type.value}",
        ":process :nemesis" if op.process == NEMESIS else f":process {dumps(op.process)}",
        f":f {dumps(Keyword(op.f))}",
        f":value {dumps(op.value)}",
    ]
    if op.error is not None:
        parts.append(f":error {dumps(op.error)}")
    for k, v in op.extra.items():
        key = dumps(Keyword(k)) if isinstance(k, str) else dumps(k)
        parts.append(f"{key} {dumps(v)}")
    return ", ".join(parts) + "}"


def op_from_edn(m: Any, position: int) -> Op:
    """Turn one EDN op map into an :class:`Op`; ``position`` stands in for a missing ``:index``.

    Raises ``ValueError`` with a readable message when the map is not an op.
    """
    if isinstance(m, Tagged) and isinstance(m.value, dict):
        m = m.value  # Jepsen writes some histories as #jepsen.history.Op{...} records
    if not isinstance(m, dict):
        raise ValueError(f"not an op map: {dumps(m)[:80]}")
    for key in ("type", "f", "process"):
        if key not in m:
            raise ValueError(f"missing field :{key}")
    try:
        typ = OpType(m["type"])
    except ValueError:
        raise ValueError(f"invalid :type {dumps(m['type'])}") from None
    index = m.get("index", position)
    time_ns = m.get("time", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise ValueError(f"invalid :index {dumps(index)}")
    if not isinstance(time_ns, (int, float)) or isinstance(time_ns, bool):
        raise ValueError(f"invalid :time {dumps(time_ns)}")
    process = m["process"]
    if isinstance(process, str):
        process = str.__str__(process)
    elif not isinstance(process, int) or isinstance(process, bool):
        raise ValueError(f"invalid :process {dumps(process)}")
    f = m["f"]
    error = m.get("error")
    if error is not None and not isinstance(error, str):
        error = dumps(error)
    return Op(
        index=index,
        time=time_ns / 1e9,
        process=process,
        type=typ,
        f=str.__str__(f) if isinstance(f, str) else dumps(f),
        value=m.get("value"),
        error=str.__str__(error) if isinstance(error, str) else None,
        extra={
            (str.__str__(k) if isinstance(k, str) else k): v
            for k, v in m.items()
            if k not in _KNOWN
        },
    )


# A fast path inside the general reader for the maps Jepsen and chaos write most: a flat map of
# keyword keys to nil, booleans, integers, keywords or strings, read with one regex match instead
# of a token loop; anything else (nested values, floats, tags, odd escapes, a repeated key) goes
# through read_form, and both give the same value for the maps this accepts.
_FLAT_KW = r"[A-Za-z*+!\-_?<>=.][A-Za-z0-9*+!\-_?<>=./#']*"
_FLAT_SEP = r"[ \t\r\n,]"
# Vectors of integers and nils, nested once ([k v], [k [a b]]): Jepsen's register values.
# Each item ends at a separator or bracket: "1111" is one item, never split (no backtracking).
_FLAT_ITEM = r"(?:nil|-?[0-9]+)(?=[ \t\r\n,\]])"
_FLAT_VEC = (
    rf"\[(?:{_FLAT_SEP}*(?:{_FLAT_ITEM}|\[(?:{_FLAT_SEP}*(?:{_FLAT_ITEM}))*{_FLAT_SEP}*\]))*"
    rf"{_FLAT_SEP}*\]"
)
_FLAT_VALUE = rf'"(?:[^"\\]|\\.)*"|nil|true|false|[-+]?(?:0|[1-9][0-9]*)|:{_FLAT_KW}|{_FLAT_VEC}'
_SEP_RUN = re.compile(r"[ \t\r\n,]+")
_FLAT_PAIR = re.compile(
    rf"{_FLAT_SEP}*:({_FLAT_KW}){_FLAT_SEP}+({_FLAT_VALUE})(?=[ \t\r\n,}}])", re.S
)
_FLAT_MAP = re.compile(
    rf"\{{(?:{_FLAT_SEP}*:{_FLAT_KW}{_FLAT_SEP}+(?:{_FLAT_VALUE})(?=[ \t\r\n,}}]))*{_FLAT_SEP}*\}}",
    re.S,
)
_FLAT_CONST = {"nil": None, "true": True, "false": False}
_BAD_KW_END = re.compile(r"[:/]$|::|^/.|/.*/$")


def _flat_map_at(text: str, pos: int) -> tuple[dict[Any, Any], int] | None:
    """The flat map (see above) starting at ``pos`` and the offset after it, or None."""
    m = _FLAT_MAP.match(text, pos)
    if m is None:
        return None
    out: dict[Any, Any] = {}
    pairs = _FLAT_PAIR.findall(text, pos + 1, m.end())
    for key, raw in pairs:
        c = raw[0]
        if c == '"':
            try:
                value: Any = unescape(raw[1:-1], 0)
            except EdnError:
                return None
        elif c == ":":
            if _BAD_KW_END.search(raw):
                return None
            value = Keyword(raw[1:])
        elif c == "[":
            # JSON reads it as EDN does once the separators are commas and nil is null; JSON
            # refuses what EDN refuses here (01, [1nil]), and then read_form says why.
            js = _SEP_RUN.sub(",", raw).replace("[,", "[").replace(",]", "]")
            try:
                value = json.loads(js.replace("nil", "null"))
            except ValueError:
                return None
        elif raw in _FLAT_CONST:
            value = _FLAT_CONST[raw]
        elif len(raw) > MAX_INT_DIGITS:
            return None  # read_form explains an integer Python will not convert
        else:
            value = int(raw)
        if _BAD_KW_END.search(key):
            return None
        out[Keyword(key)] = value
    if len(out) != len(pairs):
        return None  # a repeated key: read_form says so
    return out, m.end()


def _flat_map(text: str) -> dict[Any, Any] | None:
    """``text`` as a flat map if it is one, with only whitespace around it, else None."""
    start = skip_space(text, 0)
    got = _flat_map_at(text, start)
    if got is None or skip_space(text, got[1]) != len(text):
        return None
    return got[0]


# ---------------------------------------------------------------- reading histories


class OpLines(Sequence[int]):
    """The line each op starts on, kept as runs of ops on consecutive lines (a block the fast
    path read is one run): ``lines[i]`` is op ``i``'s line, found by bisection."""

    __slots__ = ("_lines", "_n", "_ops")

    def __init__(self) -> None:
        self._ops: list[int] = []  # first op of each run
        self._lines: list[int] = []  # its line
        self._n = 0

    def add_run(self, first_line: int, count: int) -> None:
        """The next ``count`` ops start on ``first_line`` and the lines after it."""
        if count <= 0:
            return
        ops, lines = self._ops, self._lines
        if not ops or lines[-1] + (self._n - ops[-1]) != first_line:
            ops.append(self._n)
            lines.append(first_line)
        self._n += count

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_right(self._ops, i) - 1
        return self._lines[k] + (i - self._ops[k])


@dataclass(slots=True)
class History:
    """What reading a history file gives: the ops, the line each op starts on (``lines[i]`` for
    ``ops[i]``), and the problems found (each form that could not be read or is not an op)."""

    ops: list[Op] = field(default_factory=list)
    lines: OpLines = field(default_factory=OpLines)
    problems: list[LineProblem] = field(default_factory=list)


_BLOCK = 1 << 20  # bytes per block of lines: the fast path's unit, and what stays in memory
_OP_START = re.compile(r"\n[ \t,]*[{#(\[]")
# Lines at the end of the last block that are not op maps: blank, a comment, a closing bracket.
_TRAILER_LINE = re.compile(rb"[ \t\r,]*(?:[\])]|;|$)")
_CLOSER_AT_LINE_END = re.compile(rb"\}[ \t\r,]*([\])])[ \t\r,]*$")


class _Stream:
    """A history's text, block by block: the state the blocks share.

    ``phase``: ``head`` before the first form, ``body`` while reading ops, ``after`` once the
    history's vector (or list) is closed. ``carry`` is the text of a form the last block cut
    off (its start's line in ``carry_no``), read again with the next block. ``no`` is the line
    number of the first line not yet read.
    """

    def __init__(self, name: str, *, fast: bool, errors: str) -> None:
        self.name = name
        self.fast = fast
        self.errors = errors
        self.out = History()
        self.phase = "head"
        self.closer = ""  # the closing bracket of the history's vector or list, if any
        self.closer_no = 0
        self.no = 1
        self.carry = ""
        self.carry_no = 0
        self.last_no = 0  # the last line a form started on

    def _add(self, form: Any, line: int) -> None:
        out = self.out
        try:
            out.ops.append(op_from_edn(form, len(out.ops)))
        except (ValueError, TypeError) as e:
            out.problems.append(LineProblem(self.name, line, str(e)))
            return
        out.lines.add_run(line, 1)

    def _problem(self, line: int, message: str, truncated: bool = False) -> None:
        self.out.problems.append(LineProblem(self.name, line, message, truncated))

    def block(self, data: bytes, last: bool) -> None:
        """Read one block of whole lines (the last may lack its newline)."""
        first_no = self.no
        n_lines = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
        if not self.carry and self.fast and self.phase != "after":
            data = self._fast(data, last)
        if data or self.carry:
            text = data.decode("utf-8", errors=self.errors)
            if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
                bad = self.no + text.count("\n", 0, text.index("\ufffd"))
                self._problem(bad, "bytes that are not UTF-8")
            self._general(text, last)
        self.no = first_no + n_lines

    def _fast(self, data: bytes, last: bool) -> bytes:
        """Read what the fast path takes of the block; return the rest, for the general reader,
        with ``self.no`` moved to the line the rest starts on."""
        head = b""
        if self.phase == "head":
            # Comments, blank lines and the history's opening bracket: cut where they end, and
            # give the rest of that line to the fast path behind spaces.
            text = data.decode("utf-8", errors=self.errors)
            pos = skip_space(text, 0)
            if pos >= len(text) or text.startswith("#_", pos):
                return data  # nothing but head here, or a discard: the general reader's job
            self.phase = "body"
            if text[pos] in "[(":
                self.closer = "]" if text[pos] == "[" else ")"
                self.closer_no = self.no + text.count("\n", 0, pos)
                pos += 1
            b = len(text[:pos].encode("utf-8", errors=self.errors))
            line_start = data.rfind(b"\n", 0, b) + 1
            self.no += data.count(b"\n", 0, line_start)
            head = b" " * (b - line_start)
            data = data[b:]
        main, rest = _split_trailer(data) if last else (data, b"")
        if b"{" not in main:
            return head + data  # no op map here: blank lines, comments, brackets
        chunk = head + main
        if not chunk.endswith(b"\n"):
            chunk += b"\n"
        found = ops_from_block(chunk, len(self.out.ops), op_from_edn)
        if found is None:
            return head + data
        n = chunk.count(b"\n")
        self.out.ops.extend(found)
        self.out.lines.add_run(self.no, n)
        self.last_no = self.no + n - 1
        self.no += main.count(b"\n")
        return rest

    def _general(self, text: str, last: bool) -> None:
        """Read the block's text form by form (after what a previous block cut off)."""
        base_no = self.no
        if self.carry:
            base_no = self.carry_no
            text = self.carry + text
            self.carry = ""
        pos = 0
        n = len(text)
        at_no, at_pos = base_no, 0  # a line number known at an offset, moved forward as read

        def line(p: int) -> int:
            nonlocal at_no, at_pos
            at_no += text.count("\n", at_pos, p)
            at_pos = p
            return at_no

        while True:
            pos = skip_space(text, pos)
            if pos >= n:
                return
            moved = self._bracket(text, pos, line)
            if moved is not None:
                pos = moved
                continue
            start = pos
            try:
                form, pos = self._form(text, pos)
            except EOFError:
                return  # only discarded forms were left
            except EdnError as e:
                if e.incomplete and not last:
                    self.carry = text[start:]
                    self.carry_no = line(start)
                    return
                pos = self._bad_form(e, text, start, last, line(start))
                continue
            if form is _DISCARDED:
                continue
            self.last_no = line(start)
            if self.phase == "after":
                self._problem(self.last_no, f"a form after the history's closing {self.closer}")
            else:
                self._add(form, self.last_no)

    def _bracket(self, text: str, pos: int, line: Callable[[int], int]) -> int | None:
        """Where to read on when ``pos`` is the history's own opening or closing bracket (or the
        end of its head: what came before it); None when a form starts there."""
        c = text[pos]
        if self.phase == "head" and not text.startswith("#_", pos):
            self.phase = "body"
            if c in "[(":
                self.closer = "]" if c == "[" else ")"
                self.closer_no = line(pos)
                return pos + 1
            return pos  # a file of top-level forms, no enclosing vector: read them as they are
        if self.phase == "body" and c in "])" and self.closer:
            if c != self.closer:
                self._problem(line(pos), f"the history opened with the other bracket: {c}")
            self.phase = "after"
            return pos + 1
        return None

    def _form(self, text: str, pos: int) -> tuple[Any, int]:
        """The form at ``pos`` and the offset after it (``_DISCARDED`` for a discarded one)."""
        if text[pos] == "{":
            flat = _flat_map_at(text, pos)
            if flat is not None:
                return flat
        if self.phase == "head":  # a discarded form before the history
            return _DISCARDED, read_form(text, pos + 2)[1]
        return read_form(text, pos)

    def _bad_form(self, e: EdnError, text: str, start: int, last: bool, at: int) -> int:
        """Report the form at ``start`` (line ``at``) that is not EDN; where to read on: the
        next line that starts like an op."""
        # The writer died mid-form: the text ends inside it, or it went wrong on a last line
        # that has no newline (a keyword cut to ":").
        truncated = (
            last and not text.endswith("\n") and (e.incomplete or text.find("\n", e.pos) < 0)
        )
        bad_no = at + text.count("\n", start, max(start, e.pos))
        where = f", at line {bad_no}" if e.pos > start else ""
        self._problem(at, f"not EDN ({e}{where})", truncated)
        self.last_no = at
        m = _OP_START.search(text, start)
        return m.start() + 1 if m else len(text)

    def finish(self, ends_cleanly: bool) -> History:
        if self.closer and self.phase != "after":
            self._problem(
                max(1, self.last_no, self.closer_no),
                f"history vector is not closed with {self.closer}",
                not ends_cleanly,
            )
        return self.out


_DISCARDED = object()


def _split_trailer(data: bytes) -> tuple[bytes, bytes]:
    """The last block split before its trailing lines that hold no op (blank lines, comments,
    a closing bracket), and before a closing bracket at the end of the last op's line. Looks
    at those lines only, from the end."""
    cut = len(data)
    line_end = cut - 1 if data.endswith(b"\n") else cut
    while line_end >= 0:
        line_start = data.rfind(b"\n", 0, line_end) + 1
        line = data[line_start:line_end]
        if not _TRAILER_LINE.match(line):
            m = _CLOSER_AT_LINE_END.search(line)
            if m is not None:
                cut = line_start + m.start(1)
            break
        cut = line_start
        line_end = line_start - 1
    return data[:cut], data[cut:]


def _read_chunks(
    chunks: Iterable[bytes], name: str, errors: str = "replace", *, fast: bool = True
) -> History:
    """Read a history from byte chunks, a block of whole lines at a time (see the module)."""
    stream = _Stream(name, fast=fast, errors=errors)
    prev: bytes | None = None
    pending: list[bytes] = []  # what came since the last newline, joined once one comes
    for chunk in chunks:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)  # a line longer than a chunk: no quadratic re-copying
            continue
        pending.append(chunk[:cut])
        if prev is not None:
            stream.block(prev, False)
        prev = b"".join(pending)
        pending = [chunk[cut:]]
    final = (prev or b"") + b"".join(pending)
    stream.block(final, True)
    return stream.finish(final.endswith(b"\n") or not final)


def read_history_lines(path: Path, *, fast: bool = True) -> History:
    """Read a Jepsen ``history.edn`` (see the module) with the line of each op; bytes that are
    not UTF-8 are reported, not raised."""
    with open_input(path, MAX_INPUT_BYTES) as fh:
        return _read_chunks(_file_chunks(fh), str(path), fast=fast)


def read_history(path: Path) -> tuple[list[Op], list[LineProblem]]:
    """Read a Jepsen ``history.edn``: its ops and the problems found (see the module)."""
    h = read_history_lines(path)
    return h.ops, h.problems


def read_history_text(
    text: str, name: str = "<edn>", *, fast: bool = True
) -> tuple[list[Op], list[LineProblem]]:
    """Read ops from EDN text (see the module). ``fast=False`` reads every form with the
    general reader (what the tests compare the fast path against)."""
    h = read_history_text_lines(text, name, fast=fast)
    return h.ops, h.problems


def read_history_text_lines(text: str, name: str = "<edn>", *, fast: bool = True) -> History:
    """:func:`read_history_text` with the line of each op."""
    data = text.encode("utf-8", errors="surrogatepass")
    chunks = (data[i : i + _BLOCK] for i in range(0, len(data), _BLOCK))
    return _read_chunks(chunks, name, errors="surrogatepass", fast=fast)


def _file_chunks(fh: Any) -> Iterator[bytes]:
    while chunk := fh.read(_BLOCK):
        yield chunk


def iter_history_lines(history: Iterable[Op]) -> Iterator[str]:
    for op in history:
        yield op_to_edn(op) + "\n"


def write_history(path: Path, history: Iterable[Op]) -> None:
    """Write ``history.edn``, one op map per line (readable by Jepsen, Elle and Knossos)."""
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(iter_history_lines(history))
    tmp.replace(path)
