"""Small HTML helpers: escaping, tables of whatever keys a record has, safe inline JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from chaos.histories.safe_text import clean


def e(x: Any) -> str:
    """Text for the page: control characters shown as ``\\x1b`` (the code under test writes some
    of it, and a page read with `cat` or `less -R` must not drive a terminal), then HTML-escaped."""
    return escape(clean(x), quote=True)


def fmt_value(v: Any, limit: int = 400) -> str:
    """A JSON value as short text a person reads: records as ``key value, ...`` and lists joined,
    never JSON syntax or ``\\u2014`` escapes. A number stays a number whatever its size (a seed
    of 1783085369 is not a date): a time is rendered by what its field is declared to be
    (chaos.report.final_state.WALL_CLOCK), never guessed from its magnitude."""
    s = _text(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "none"}[v]
    if isinstance(v, int | float):
        return _number(v)
    if isinstance(v, Mapping):
        return ", ".join(f"{k} {_text(x)}" for k, x in v.items()) or "(empty)"
    if isinstance(v, list | tuple):
        sep = "; " if any(isinstance(x, Mapping | list | tuple) for x in v) else ", "
        return sep.join(_text(x) for x in v) or "(none)"
    return str(v)


def _number(v: int | float) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isfinite(v) and 1e6 <= abs(v) < 1e15:  # its digits: 1783085369.5, not 1.78309e+09
        return f"{v:.3f}".rstrip("0").rstrip(".")
    return f"{v:.6g}"


def as_text(v: Any) -> str:
    """A spec field for a sentence or a command line: lists (``nemesis: [pause, kill]``) joined."""
    if isinstance(v, list | tuple):
        return ",".join(as_text(x) for x in v)
    if v is None:
        return ""
    return v if isinstance(v, str) else fmt_value(v)


def kv_table(d: Mapping[str, Any], cls: str = "kv") -> str:
    rows = "".join(f"<tr><th>{e(k)}</th><td>{value_cell(v)}</td></tr>" for k, v in d.items())
    return f'<table class="{cls}">{rows}</table>'


def value_cell(v: Any) -> str:
    """``v`` as the HTML of one table cell."""
    # Evidence is often a list of records (the commits, the event chain) or one record (a lock
    # holder): small tables of them read far better than one long line.
    if isinstance(v, list) and 0 < len(v) <= 60 and all(isinstance(x, dict) for x in v):
        cols: list[str] = []
        for x in v:
            cols.extend(k for k in x if k not in cols)
        rows = [[x.get(c, "") for c in cols] for x in v]
        return table(cols, rows, cls="grid nested")
    if isinstance(v, dict) and 1 < len(v) <= 60 and all(isinstance(x, dict) for x in v.values()):
        # records by name (each task's result, each night's run): one row each, like a list
        cols = []
        for x in v.values():
            cols.extend(k for k in x if k not in cols)
        named = [[k, *(x.get(c, "") for c in cols)] for k, x in v.items()]
        return table(["", *cols], named, cls="grid nested")
    if isinstance(v, dict) and 0 < len(v) <= 40:
        return kv_table(v, cls="kv nested")
    if isinstance(v, list) and 1 < len(v) <= 60 and all(isinstance(x, str) for x in v):
        return "<ol>" + "".join(f"<li>{e(x)}</li>" for x in v) + "</ol>"
    return e(fmt_value(v))


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "grid", raw: bool = False
) -> str:
    """Rows of cells; ``raw`` cells are trusted HTML built by the caller (already escaped)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if raw else e(fmt_value(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def script_json(element_id: str, obj: Any) -> str:
    # "<" is escaped so that no value (an op's payload is arbitrary) can close the script element.
    text = json.dumps(obj, separators=(",", ":"), default=str).replace("<", "\\u003c")
    return f'<script type="application/json" id="{e(element_id)}">{text}</script>'


def section(sid: str, title: str, body: str) -> str:
    return f'<section id="{e(sid)}"><h2>{e(title)}</h2>{body}</section>'
