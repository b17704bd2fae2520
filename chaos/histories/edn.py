"""A small EDN reader and writer, enough for Jepsen histories, with no dependency.

EDN maps onto Python as: ``nil``/``true``/``false`` → ``None``/``True``/``False``; integers (``42``,
``42N``) → ``int``; floats (``1.5``, ``1e3``, ``1.5M``, ``##Inf``) → ``float``; strings → ``str``;
keywords → :class:`Keyword` (a ``str`` subclass, so ``Keyword("read") == "read"`` and JSON sees a
string); symbols and characters → ``str``; vectors and lists → ``list``; maps → ``dict``; sets →
``frozenset``. Map keys and set members that would be lists become tuples, because Python needs
them hashable. A tagged literal (``#inst "..."``, ``#jepsen.history.Op{...}``) is kept as a
:class:`Tagged` string holding its source text, so it writes back unchanged; its parsed form is in
``.value`` (Jepsen sometimes writes ops as tagged records).

Jepsen's ``history.edn`` is either one vector of op maps or one op map per line; :func:`read_history`
reads both, reports each unreadable op with its line number and keeps going, and
:func:`write_history` writes one map per line with Jepsen's key names. Times are nanoseconds in EDN
and seconds in chaos; a time with at most nanosecond precision survives ``read(write(h))``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.histories.edn_fast import ops_from_block
from chaos.histories.edn_types import EdnError, Keyword, Tagged
from chaos.histories.files import open_input
from chaos.histories.jsonl import LineProblem
from chaos.histories.limits import MAX_DEPTH, MAX_INPUT_BYTES, MAX_INT_DIGITS
from chaos.histories.ops import NEMESIS, Op, OpType

__all__ = [
    "EdnError",
    "Keyword",
    "Tagged",
    "dumps",
    "loads",
    "op_from_edn",
    "op_to_edn",
    "read_history",
    "read_history_text",
    "write_history",
]


# One token per match. Atoms (numbers, symbols, keywords, nil/true/false) are classified after.
_DELIM = r"\s,()\[\]{}\";"
_WS = r"(?:[\s,]+|;[^\n]*)+"
_FORMS = rf"""
    (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<open>\#\{{|[(\[{{])
  | (?P<close>[)\]}}])
  | (?P<disc>\#_)
  | (?P<special>\#\#[^{_DELIM}]*)
  | (?P<tag>\#[A-Za-z][^{_DELIM}]*)
  | (?P<char>\\(?:newline|space|tab|return|formfeed|backspace|u[0-9a-fA-F]{{4}}|.))
  | (?P<atom>[^{_DELIM}\\\#][^{_DELIM}]*)
"""
_TOKEN = re.compile(rf"(?P<ws>{_WS}) | {_FORMS}", re.X | re.S)
# The same tokens with leading whitespace and comments folded in: one match per token.
_FORM_TOKEN = re.compile(rf"(?:{_WS})? (?:{_FORMS})", re.X | re.S)
_WS_ONLY = re.compile(rf"(?:{_WS})?", re.X | re.S)
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)N?")
_FLOAT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?M?")
_KEYWORD_NAME = re.compile(r"[A-Za-z*+!\-_?<>=.][A-Za-z0-9*+!\-_?<>=./:#']*")
_CHARS = {
    "newline": "\n",
    "space": " ",
    "tab": "\t",
    "return": "\r",
    "formfeed": "\f",
    "backspace": "\b",
}
_STR_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_STR_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}
_CLOSER = {"[": "]", "(": ")", "{": "}", "#{": "}"}
_DISCARDED = object()


def _unescape(body: str, pos: int) -> str:
    if "\\" not in body:
        return body

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "u" and len(e) == 5:
            return chr(int(e[1:], 16))
        if e in _STR_UNESCAPE:
            return _STR_UNESCAPE[e]
        raise EdnError(f"unknown string escape \\{e}", pos)

    return _STR_ESCAPE.sub(sub, body)


def _atom(text: str, pos: int) -> Any:
    if text == "nil":
        return None
    if text == "true":
        return True
    if text == "false":
        return False
    c = text[0]
    if c == ":":
        name = text[1:]
        if not name or name.startswith(":"):
            raise EdnError(f"bad keyword {text!r}", pos)
        return Keyword(name)
    if c.isdigit() or (c in "+-" and len(text) > 1 and text[1].isdigit()):
        if _INT.fullmatch(text):
            try:
                return int(text.rstrip("N"))
            except ValueError:  # more digits than Python converts (sys.set_int_max_str_digits)
                raise EdnError(f"an integer of {len(text)} digits", pos) from None
        if _FLOAT.fullmatch(text):
            return float(text.rstrip("M"))
        raise EdnError(f"bad number {text!r}", pos)
    return text  # a symbol


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple((_hashable(k), _hashable(x)) for k, x in v.items())
    if isinstance(v, set):
        return frozenset(v)
    return v


def _build(kind: str, items: list[Any], pos: int) -> Any:
    if kind in ("[", "("):
        return items
    if kind == "#{":
        return frozenset(_hashable(x) for x in items)
    if len(items) % 2:
        raise EdnError("map literal has an odd number of forms", pos)
    return {_hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}


def read_form(text: str, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
    """Read one form starting at ``pos``; return it and the offset just after it.

    Raises :class:`EdnError` (never anything else) on bad or incomplete input, and
    :class:`EOFError` if there is no form before ``end``. Nesting uses an explicit stack, so deep
    input cannot overflow Python's recursion limit.
    """
    if end is None:
        end = len(text)
    match = _FORM_TOKEN.match
    # Each frame is a collection being filled [opener, items, start] or a prefix waiting for the
    # next form: ("#_",) discards it, ("#", tag, start) wraps it as a tagged literal.
    stack: list[Any] = []
    while True:
        m = match(text, pos, end)
        if m is None:
            pos = _WS_ONLY.match(text, pos, end).end()  # type: ignore[union-attr]
            if pos >= end:
                if stack:
                    raise EdnError("unexpected end of input", end)
                raise EOFError
            c = text[pos]
            if c == '"':
                raise EdnError("unterminated string", pos)
            raise EdnError(f"unexpected character {c!r}", pos)
        kind = m.lastgroup
        tok = m.group(kind)  # type: ignore[arg-type]
        start = m.start(kind)  # type: ignore[arg-type]
        pos = m.end()
        # Each open collection and pending prefix is a level: bounded, because a tag keeps its
        # source text (100,000 nested tags held 100,000 growing copies) and the code after the
        # reader walks values recursively.
        if kind in ("open", "disc", "tag") and len(stack) >= MAX_DEPTH:
            raise EdnError(f"values nest deeper than {MAX_DEPTH} levels", start)
        if kind == "open":
            stack.append([tok, [], start])
            continue
        if kind == "disc":
            stack.append(("#_",))
            continue
        if kind == "tag":
            stack.append(("#", tok[1:], start))
            continue
        value: Any
        if kind == "close":
            if not stack or not isinstance(stack[-1], list):
                raise EdnError(f"unmatched {tok!r}", start)
            opener, items, ostart = stack.pop()
            if _CLOSER[opener] != tok:
                raise EdnError(f"{opener!r} closed by {tok!r}", start)
            value = _build(opener, items, start)
            start = ostart
        elif kind == "str":
            value = _unescape(tok[1:-1], start)
        elif kind == "atom":
            value = _atom(tok, start)
        elif kind == "char":
            body = tok[1:]
            if len(body) == 5 and body[0] == "u":
                value = chr(int(body[1:], 16))
            else:
                value = _CHARS.get(body, body)
        else:  # special: ##Inf ##-Inf ##NaN
            name = tok[2:]
            specials = {"Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
            if name not in specials:
                raise EdnError(f"unknown symbolic value ##{name}", start)
            value = specials[name]
        # A complete form: let pending prefixes consume it, then place it.
        while True:
            if not stack:
                if value is _DISCARDED:
                    break
                return value, pos
            top = stack[-1]
            if isinstance(top, list):
                if value is not _DISCARDED:
                    top[1].append(value)
                break
            stack.pop()
            if top[0] == "#_":
                value = _DISCARDED
            elif value is not _DISCARDED:
                value = Tagged(text[top[2] : pos], top[1], value)
                start = top[2]
            else:
                # "#tag #_ x" — the discard left nothing to tag yet; keep waiting.
                stack.append(top)
                break


# A fast path for the lines Jepsen and chaos write most: a flat map of keyword keys to nil,
# booleans, integers, keywords or strings. One regex match instead of a token loop; anything
# else (nested values, floats, tags, odd escapes) goes through read_form, and both give the same
# value for the lines this accepts.
_FLAT_KW = r"[A-Za-z*+!\-_?<>=.][A-Za-z0-9*+!\-_?<>=./:#']*"
_FLAT_VALUE = rf'"(?:[^"\\]|\\.)*"|nil|true|false|[-+]?(?:0|[1-9][0-9]*)|:{_FLAT_KW}'
_FLAT_PAIR = re.compile(rf"[\s,]*:({_FLAT_KW})\s+({_FLAT_VALUE})(?=[\s,}}])", re.S)
_FLAT_MAP = re.compile(
    rf"\s*\{{(?:[\s,]*:{_FLAT_KW}\s+(?:{_FLAT_VALUE})(?=[\s,}}]))*[\s,]*\}}\s*", re.S
)
_FLAT_CONST = {"nil": None, "true": True, "false": False}


def _flat_map(text: str) -> dict[Any, Any] | None:
    """``text`` as a flat map if it is one (see above), else None."""
    if not _FLAT_MAP.fullmatch(text):
        return None
    out: dict[Any, Any] = {}
    for key, raw in _FLAT_PAIR.findall(text):
        c = raw[0]
        if c == '"':
            try:
                value: Any = _unescape(raw[1:-1], 0)
            except EdnError:
                return None
        elif c == ":":
            value = Keyword(raw[1:])
        elif raw in _FLAT_CONST:
            value = _FLAT_CONST[raw]
        elif len(raw) > MAX_INT_DIGITS:
            return None  # read_form explains an integer Python will not convert
        else:
            value = int(raw)
        out[Keyword(key)] = value
    return out


def loads(text: str) -> Any:
    """Read exactly one EDN form from ``text``."""
    try:
        value, pos = read_form(text)
    except EOFError:
        raise EdnError("no form in input", len(text)) from None
    m = _TOKEN.match(text, pos)
    if pos < len(text) and not (m and m.lastgroup == "ws" and m.end() == len(text)):
        raise EdnError("more than one form in input", pos)
    return value


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
        out.append(":" + v if _KEYWORD_NAME.fullmatch(v) else _dump_str(v))
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
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(" ")
            _dump(x, out)
        out.append("]")
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


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _next_op_start(text: str, pos: int) -> int:
    """After a broken op, resume at the next line that starts an op (``{`` or ``#``)."""
    m = re.compile(r"\n[ \t,]*[{#]").search(text, pos)
    return m.start() + 1 if m else len(text)


def _skip_ws(text: str, pos: int) -> int:
    m = _TOKEN.match(text, pos)
    return m.end() if m and m.lastgroup == "ws" else pos


def _one_op_per_line(text: str) -> bool:
    """Whether ops sit one per line (what Jepsen writes): most non-blank lines start a map.

    Decided by counting, not by parsing the first form, so that one broken line (an unclosed
    string, say) cannot make the whole file look pretty-printed.
    """
    starts = total = 0
    for line in text.split("\n", 2000)[:2000]:
        s = line.lstrip(" \t,[")
        if not s or s.startswith(";"):
            continue
        total += 1
        starts += s[0] in "{#"
    return total == 0 or starts * 2 >= total


def _read_lines(
    lines: list[str],
    first_no: int,
    name: str,
    ops: list[Op],
    problems: list[LineProblem],
    truncated_no: int,
) -> None:
    """The general reader, line by line: every form on each line is an op (a flat map takes a
    regex fast path). ``truncated_no`` is the number of a last line that had no newline (its
    syntax errors are a truncation), or 0."""

    def add(form: Any, line: int) -> bool:
        try:
            ops.append(op_from_edn(form, len(ops)))
        except (ValueError, TypeError) as e:
            problems.append(LineProblem(name, line, str(e)))
            return False
        return True

    for i, line in enumerate(lines):
        no = first_no + i
        flat = _flat_map(line)
        if flat is not None:
            add(flat, no)
            continue
        p = 0
        n_line = len(line)
        while True:
            p = _WS_ONLY.match(line, p).end()  # type: ignore[union-attr]
            if p >= n_line:
                break
            try:
                form, p = read_form(line, p)
            except EOFError:
                break
            except EdnError as e:
                problems.append(LineProblem(name, no, f"not EDN ({e})", no == truncated_no))
                break
            if not add(form, no):
                break  # one problem per line is enough


_BLOCK = 1 << 20  # bytes per block of lines: the fast path's unit, and what stays in memory
_OPENER = re.compile(rb"[ \t\r\n,]*\[[ \t\r\n,]*(?=[{#\]]|$)")
_CLOSER_AT_END = re.compile(rb"\][ \t\r,;]*(?:\n[ \t\r\n,]*)?$")


@dataclass(slots=True)
class _Progress:
    no: int = 1  # number of the next block's first line
    outer: bool | None = None  # the ops sit in a history vector; None: not seen yet
    closed: bool = False  # its "]" was found
    last_no: int = 0  # the last non-blank line


def _read_line_blocks(
    chunks: Iterable[bytes], name: str, errors: str = "replace"
) -> tuple[list[Op], list[LineProblem]]:
    """Read one-op-per-line EDN from byte chunks, a block of whole lines at a time.

    Each block first goes to :func:`chaos.histories.edn_fast.ops_from_block` (the usual Jepsen
    op lines, rewritten as JSON and decoded by msgspec); a block it declines is read by the
    general reader, line by line, with line numbers counted across blocks. Only one block is
    held at a time besides the ops, so memory stays bounded by the history's ops.
    """
    ops: list[Op] = []
    problems: list[LineProblem] = []
    state = _Progress()

    def process(block: bytes, last: bool) -> None:
        if state.outer is None and block.strip(b" \t\r\n,"):
            # A history vector opens with "[" followed by an op map (or a tagged record, or
            # "]"); any other "[" is a broken line of its own.
            m = _OPENER.match(block)
            state.outer = m is not None
            if m is not None:
                i = block.index(b"[")
                block = block[:i] + b" " + block[i + 1 :]
        n_lines = block.count(b"\n") + (not block.endswith(b"\n") and bool(block))
        ends_cleanly = block.endswith(b"\n") or not block
        if last:
            if state.outer:
                m = _CLOSER_AT_END.search(block)
                if m is not None:
                    block = block[: m.start()] + b" " + block[m.start() + 1 :]
                    state.closed = True
            body = block.rstrip(b" \t\r\n,")
            state.last_no = state.no + body.count(b"\n") if body else state.no - 1
            block = body + (b"\n" if body else b"")
        found = ops_from_block(block, len(ops), op_from_edn) if block else []
        if found is not None:
            ops.extend(found)
        else:
            # Files: bytes that are not UTF-8 become U+FFFD and are reported. Text given as str
            # was encoded with surrogatepass, and decodes back to itself.
            text = block.decode("utf-8", errors=errors)
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            truncated_no = state.no + len(lines) - 1 if last and not ends_cleanly else 0
            _read_lines(lines, state.no, name, ops, problems, truncated_no)
            if "\ufffd" in text and b"\xef\xbf\xbd" not in block:
                bad = state.no + text.count("\n", 0, text.index("\ufffd"))
                problems.append(LineProblem(name, bad, "bytes that are not UTF-8"))
        state.no += n_lines

    prev: bytes | None = None
    tail = b""
    for chunk in chunks:
        buf = tail + chunk
        cut = buf.rfind(b"\n") + 1
        if not cut:
            tail = buf
            continue
        if prev is not None:
            process(prev, last=False)
        prev, tail = buf[:cut], buf[cut:]
    final = (prev or b"") + tail
    process(final, last=True)
    if state.outer and not state.closed:
        problems.append(
            LineProblem(
                name,
                max(1, state.last_no),
                "history vector is not closed with ]",
                not final.endswith(b"\n") and bool(final),
            )
        )
    return ops, problems


def read_history_text(text: str, name: str = "<edn>") -> tuple[list[Op], list[LineProblem]]:
    """Read ops from EDN text: one vector of op maps, or op maps one after another.

    Files with one op per line (what Jepsen writes) are read line by line, so a broken line costs
    only itself; pretty-printed files whose maps span lines are read as a stream of forms.
    """
    if _one_op_per_line(text):
        data = text.encode("utf-8", errors="surrogatepass")
        chunks = (data[i : i + _BLOCK] for i in range(0, len(data), _BLOCK))
        return _read_line_blocks(chunks, name, errors="surrogatepass")
    return _read_forms(text, name)


def _read_forms(text: str, name: str) -> tuple[list[Op], list[LineProblem]]:
    """Pretty-printed EDN (maps spanning lines): a stream of forms over the whole text."""
    ops: list[Op] = []
    problems: list[LineProblem] = []
    ends_cleanly = text.endswith("\n") or not text
    pos = _skip_ws(text, 0)
    after = _skip_ws(text, pos + 1)
    outer = text.startswith("[", pos) and (after >= len(text) or text[after] in "{#]")
    if outer:
        pos = after

    def add(form: Any, line: int) -> bool:
        try:
            ops.append(op_from_edn(form, len(ops)))
        except (ValueError, TypeError) as e:
            problems.append(LineProblem(name, line, str(e)))
            return False
        return True

    n = len(text)
    last_line = _line_of(text, n)
    while pos < n:
        pos = _skip_ws(text, pos)
        if pos >= n:
            break
        if outer and text.startswith("]", pos):
            outer = False
            if text[pos + 1 :].strip(" \t\r\n,"):
                problems.append(
                    LineProblem(name, _line_of(text, pos), "text after the history vector's ]")
                )
            break
        start = pos
        try:
            form, pos = read_form(text, pos)
        except EOFError:
            break
        except EdnError as e:
            at = _line_of(text, start)
            truncated = e.pos >= n and not ends_cleanly and at == last_line
            msg = f"not EDN ({e}, at line {_line_of(text, e.pos)})"
            problems.append(LineProblem(name, at, msg, truncated))
            pos = _next_op_start(text, start)
            continue
        add(form, _line_of(text, start))
    if outer:
        problems.append(
            LineProblem(name, last_line, "history vector is not closed with ]", not ends_cleanly)
        )
    return ops, problems


def read_history(path: Path) -> tuple[list[Op], list[LineProblem]]:
    """Read a Jepsen ``history.edn``; bytes that are not UTF-8 are reported, not raised.

    One-op-per-line files (what Jepsen writes) are read in blocks of lines, most of them at
    JSON speed (:mod:`chaos.histories.edn_fast`); pretty-printed ones as a stream of forms.
    """
    name = str(path)
    with open_input(path, MAX_INPUT_BYTES) as fh:
        head = fh.read(_BLOCK)
        if _one_op_per_line(head.decode("utf-8", errors="replace")):
            return _read_line_blocks(_chain_chunks(head, fh), name)
        data = head + fh.read()
    text = data.decode("utf-8", errors="replace")
    ops, problems = _read_forms(text, name)
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        bad = text.index("\ufffd")
        problems.insert(0, LineProblem(name, _line_of(text, bad), "bytes that are not UTF-8"))
    return ops, problems


def _chain_chunks(head: bytes, fh: Any) -> Iterator[bytes]:
    yield head
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
