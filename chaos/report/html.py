"""Small HTML helpers: escaping, tables of whatever keys a record has, safe inline JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from chaos.histories.safe_text import clean


def e(x: Any) -> str:
    """Text for the page: control characters shown as ``\\x1b`` (the code under test writes some
    of it, and a page read with `cat` or `less -R` must not drive a terminal), then HTML-escaped."""
    return escape(clean(x), quote=True)


def fmt_value(v: Any, limit: int = 400) -> str:
    """A JSON value as short text for a table cell."""
    if isinstance(v, str):
        s = v
    elif isinstance(v, float):
        s = f"{v:.6g}"
    else:
        s = json.dumps(v, separators=(", ", ": "), default=str)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def as_text(v: Any) -> str:
    """A spec field for a sentence or a command line: lists (``nemesis: [pause, kill]``) joined."""
    if isinstance(v, list | tuple):
        return ",".join(as_text(x) for x in v)
    if v is None:
        return ""
    return v if isinstance(v, str) else fmt_value(v)


def kv_table(d: Mapping[str, Any], cls: str = "kv") -> str:
    rows = "".join(f"<tr><th>{e(k)}</th><td>{_cell(v)}</td></tr>" for k, v in d.items())
    return f'<table class="{cls}">{rows}</table>'


def _cell(v: Any) -> str:
    # Evidence is often a list of records (the commits, the event chain): a small table of them
    # reads far better than one long line of JSON.
    if isinstance(v, list) and 0 < len(v) <= 60 and all(isinstance(x, dict) for x in v):
        cols: list[str] = []
        for x in v:
            cols.extend(k for k in x if k not in cols)
        rows = [[x.get(c, "") for c in cols] for x in v]
        return table(cols, rows, cls="grid nested")
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
