"""Jepsen's textual op lines: ``jepsen.log`` and ``history.txt``.

Jepsen's logger prints every op it records as::

    INFO  jepsen.util - 3\t:invoke\t:cas\t[3 0]
    2017-03-27 10:16:03,539{GMT}\tINFO\t[jepsen worker 2] jepsen.util: 2\t:ok\t:read\t4

and ``history.txt`` holds the same fields without the logging prefix: process, ``:type``, ``:f``,
the value in EDN, and optionally an error after a further tab. Separators may be tabs or runs of
spaces. A process is an integer or ``:nemesis``.

In a log file (a file with at least one ``jepsen.util`` line) other loggers' lines are skipped
silently, and only ``jepsen.util`` lines that do not parse as ops are reported. In a
``history.txt`` every non-blank line must be an op. A leading ``YYYY-MM-DD HH:MM:SS,mmm``
timestamp, when present, gives the op's time (seconds since the first one); otherwise times are 0.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from chaos.histories.edn import EdnError, Keyword, dumps, read_form
from chaos.histories.files import read_input
from chaos.histories.jsonl import LineProblem
from chaos.histories.limits import MAX_INPUT_BYTES
from chaos.histories.ops import NEMESIS, Op, OpType

__all__ = ["looks_like_log", "parse_op_text", "read_log", "read_log_text"]

_UTIL = re.compile(r"jepsen\.util(?:\s+-\s+|:\s+)")
_OP = re.compile(r"\s*(\S+)\s+:(\w+)\s+(\S+)(?:[ \t]+(.*?))?\s*")
_STAMP = re.compile(r"\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)[,.](\d{1,6})")
_TYPES = {t.value: t for t in OpType}
_SIMPLE_KW = re.compile(r":[A-Za-z_][A-Za-z0-9_\-]*")
_SIMPLE_VALUE = re.compile(
    r"(nil)|([-+]?(?:0|[1-9][0-9]*))|\[([-+]?(?:0|[1-9][0-9]*)) ([-+]?(?:0|[1-9][0-9]*))\]"
    r"|:([A-Za-z_][A-Za-z0-9_\-]*)"
)


def looks_like_log(text: str) -> bool:
    """Whether ``text`` (the head of a file) reads as Jepsen op lines rather than JSON or EDN."""
    for line in text.splitlines()[:50]:
        if not line.strip():
            continue
        if _UTIL.search(line):
            return True
        m = _OP.fullmatch(line)
        if m and m.group(2) in _TYPES:
            return True
    return False


def _process(token: str) -> int | str:
    if token.lstrip("-").isdigit():
        return int(token)
    if token in (":nemesis", NEMESIS):
        return NEMESIS
    if token.startswith(":") and len(token) > 1:
        return token[1:]
    raise ValueError(f"process {token!r} is neither an integer nor a keyword")


def _value_and_error(rest: str) -> tuple[Any, str | None]:
    if not rest:
        return None, None
    # history.txt puts the error after a tab; the value itself never holds a raw tab.
    error: str | None = None
    if "\t" in rest:
        rest, tail = rest.split("\t", 1)
        error = tail.strip() or None
    try:
        value, end = read_form(rest)
    except EOFError:
        return None, error
    except EdnError as e:
        raise ValueError(f"value is not EDN ({e})") from None
    tail = rest[end:].strip()
    if tail:
        error = tail if error is None else f"{tail} {error}"
    return value, error


def parse_op_text(text: str, index: int, time: float = 0.0) -> Op:
    """Parse ``process :type :f value [error]``; raise ``ValueError`` saying what is wrong."""
    m = _OP.fullmatch(text)
    if not m:
        raise ValueError("expected `process :type :f value`")
    process_s, type_s, f_s, rest = m.groups()
    typ = _TYPES.get(type_s)
    if typ is None:
        raise ValueError(f"unknown op type :{type_s}")
    if _SIMPLE_KW.fullmatch(f_s):
        f = f_s[1:]
    else:
        try:
            f_v, _ = read_form(f_s)
        except (EdnError, EOFError):
            raise ValueError(f"f {f_s!r} is not EDN") from None
        f = str.__str__(f_v) if isinstance(f_v, str) else dumps(f_v)
    simple = _SIMPLE_VALUE.fullmatch(rest or "nil")
    if simple is not None:
        # The usual values (nil, n, [a b], :keyword) without the EDN reader: same results.
        nil, n, a, b, kw = simple.groups()
        value: Any = None if nil else int(n) if n else [int(a), int(b)] if a else Keyword(kw)
        error = None
    else:
        value, error = _value_and_error(rest or "")
    if isinstance(error, str) and error.startswith(":"):
        error = error[1:]
    return Op(
        index=index,
        time=time,
        process=_process(process_s),
        type=typ,
        f=f,
        value=value,
        error=error,
    )


def _stamp(line: str) -> float | None:
    m = _STAMP.match(line)
    if not m:
        return None
    try:
        t = datetime.fromisoformat(m.group(1).replace(" ", "T"))
    except ValueError:
        return None
    return t.timestamp() + int(m.group(2)) / 10 ** len(m.group(2))


def read_log_text(text: str, name: str = "<log>") -> tuple[list[Op], list[LineProblem]]:
    ops: list[Op] = []
    problems: list[LineProblem] = []
    lines = text.split("\n")
    last = len(lines)
    if lines and lines[-1] == "":
        last -= 1
    truncated_tail = bool(text) and not text.endswith("\n")
    log_mode = _UTIL.search(text) is not None
    origin: float | None = None
    for no, line in enumerate(lines[:last], start=1):
        if not line.strip():
            continue
        if log_mode:
            m = _UTIL.search(line)
            if m is None:
                continue
            body = line[m.end() :]
        else:
            body = line
        t = 0.0
        stamp = _stamp(line) if log_mode else None
        if stamp is not None:
            if origin is None:
                origin = stamp
            t = stamp - origin
        try:
            ops.append(parse_op_text(body, len(ops), t))
        except ValueError as e:
            problems.append(LineProblem(name, no, str(e), truncated_tail and no == last))
    return ops, problems


def read_log(path: Path) -> tuple[list[Op], list[LineProblem]]:
    """Read a Jepsen log or ``history.txt``; undecodable bytes are reported, not raised."""
    data = read_input(Path(path), MAX_INPUT_BYTES)
    text = data.decode("utf-8", errors="replace")
    ops, problems = read_log_text(text, str(path))
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        line = text.count("\n", 0, text.index("\ufffd")) + 1
        problems.insert(0, LineProblem(str(path), line, "bytes that are not UTF-8"))
    return ops, problems
