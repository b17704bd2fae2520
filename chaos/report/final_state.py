"""The final state as a person reads it: the etcd proxy's journal and etcd's own record as tables
of operations, wall-clock fields as seconds into the run, long values folded.

``final.json`` is whatever the workload read after the run, plus two large records chaos keeps
itself: ``journal`` (each node's etcd proxy: one entry per change a service asked for, values
as the bytes it sent) and ``record`` (etcd's MVCC history under the workload's prefix). Printed
as nested key-value tables they were most of a page and wider than it; here each is a table of
operations, one row per key written, folded under a one-line summary.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from chaos.histories.limits import loads_bounded
from chaos.report.html import e, fmt_value, kv_table, value_cell

# Fields of final.json that are declared wall-clock times (seconds since 1970): the journal's
# ``wall``, lab1's lock record (``lock_until``, ``locked_at``) and its applications and nights
# (``at``). Shown as seconds into the run, the clock every other time on the page uses; a
# number in any other field stays a number, whatever its size (a seed is not a date).
WALL_CLOCK = frozenset({"wall", "at", "lock_until", "locked_at"})
# journal fields a person does not need in the table (the host's monotonic clock, the entry's
# number): the time column and the order of the rows say it
_QUIET = frozenset({"mono", "seq"})
FOLD_CHARS = (
    160  # a value longer than this (two lines of its column) is folded under its first words
)
FOLD_ROWS = 15  # a top-level field drawn taller than this many rows is folded under its gist


def run_origin(final: Mapping[str, Any], spec: Mapping[str, Any]) -> float | None:
    """The run's start in wall-clock seconds: from the journal (each entry has its wall time and
    its time into the run), else the spec's ``started_at`` (to the second)."""
    journal = final.get("journal")
    entries = journal.get("entries") if isinstance(journal, Mapping) else None
    if isinstance(entries, list):
        got = [
            x["wall"] - x["time"]
            for x in entries
            if isinstance(x, Mapping) and _num(x.get("wall")) and _num(x.get("time"))
        ]
        if got:
            return float(statistics.median(got))
    started = spec.get("started_at")
    if isinstance(started, str):
        try:
            return datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z").timestamp()
        except ValueError:
            return None
    return None


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _clock(v: float, origin: float | None) -> str:
    if origin is None:
        return datetime.fromtimestamp(v, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    return f"{v - origin:.3f} s"


def with_times(v: Any, origin: float | None, key: str = "") -> Any:
    """``v`` with every declared wall-clock field as text in the run's clock."""
    if key in WALL_CLOCK and _num(v):
        return _clock(float(v), origin)
    if isinstance(v, Mapping):
        return {k: with_times(x, origin, str(k)) for k, x in v.items()}
    if isinstance(v, list):
        return [with_times(x, origin) for x in v]
    return v


def _decoded(raw: Any, origin: float | None) -> Any:
    """A value as a service sent it (JSON text, mostly), decoded when it is JSON."""
    if isinstance(raw, Mapping) and "chaos_truncated_bytes" in raw:
        return f"({raw['chaos_truncated_bytes']} bytes, not kept)"
    if isinstance(raw, str):
        try:
            raw = loads_bounded(raw)  # a service's value: never a RecursionError
        except ValueError:
            return raw
    return with_times(raw, origin)


def folded(text: str) -> str:
    """Escaped ``text``, folded under its first words when long."""
    if len(text) <= FOLD_CHARS:
        return e(text)
    head = text[:FOLD_CHARS].rsplit(" ", 1)[0]
    return f"<details><summary>{e(head)} …</summary>{e(text)}</details>"


def _operation(x: Mapping[str, Any]) -> str:
    method = str(x.get("method", "?")).rsplit("/", 1)[-1]
    words = {"Txn": "txn", "Put": "put", "DeleteRange": "delete", "LeaseGrant": "lease grant",
             "LeaseRevoke": "lease revoke", "LeaseKeepAlive": "lease keep-alive"}  # fmt: skip
    out = words.get(method, method)
    if x.get("succeeded") is False:
        out += " (compare failed: its other branch)"
    if _num(x.get("ttl")):
        out += f", ttl {x['ttl']} s"
    if x.get("outcome") not in (None, "ok"):
        out += f" — {x['outcome']}" + (f": {x['error']}" if x.get("error") else "")
    return out


def _writes(x: Mapping[str, Any], origin: float | None) -> list[tuple[str, str]]:
    """(key, value) of each change the entry asked for; a lease operation names its lease."""
    rows: list[tuple[str, str]] = []
    for p in x.get("puts") or []:
        if isinstance(p, Mapping):
            lease = f" (lease {p['lease']})" if p.get("lease") else ""
            rows.append(
                (str(p.get("key", "?")), fmt_value(_decoded(p.get("value"), origin)) + lease)
            )
    for d in x.get("deletes") or []:
        if isinstance(d, Mapping):
            end = f" … {d['range_end']}" if d.get("range_end") else ""
            rows.append((f"{d.get('key', '?')}{end}", "deleted"))
    if not rows and x.get("lease") is not None:
        rows.append(("", f"lease {x['lease']}"))
    return rows or [("", "")]


def _rows(ops: list[tuple[list[str], list[tuple[str, str]]]]) -> str:
    """One row per key written; the operation's own cells span its keys' rows."""
    out: list[str] = []
    for cells, writes in ops:
        span = f' rowspan="{len(writes)}"' if len(writes) > 1 else ""
        head = "".join(f"<td{span}>{c}</td>" for c in cells)
        for i, (k, v) in enumerate(writes):
            own = f'<td class="key"><code>{e(k)}</code></td><td>{folded(v)}</td>'
            out.append(f"<tr>{head if i == 0 else ''}{own}</tr>")
    return "".join(out)


def _when(x: Mapping[str, Any]) -> tuple[float, float]:
    t, rev = x.get("time"), x.get("revision")
    return (
        float(t) if isinstance(t, int | float) else float("inf"),
        float(rev) if isinstance(rev, int | float) else float("inf"),
    )


def journal_table(entries: list[Any], origin: float | None) -> str:
    ops = []
    # each node's proxy journals its own entries: one table in the run's order, not by node
    for x in sorted((x for x in entries if isinstance(x, Mapping)), key=_when):
        t = x.get("time")
        rev = x.get("revision")
        cells = [
            e(f"{t:.3f}" if _num(t) else "?"),
            e(x.get("node", "?")),
            e(_operation(x)),
            e("" if rev is None else rev),
        ]
        ops.append((cells, _writes(x, origin)))
    head = "".join(
        f"<th>{h}</th>" for h in ("time (s)", "node", "operation", "revision", "key", "value")
    )
    return (
        f'<table class="grid ops"><thead><tr>{head}</tr></thead><tbody>{_rows(ops)}</tbody></table>'
    )


def record_table(txns: list[Any], origin: float | None) -> str:
    ops = []
    for x in txns:
        if not isinstance(x, Mapping):
            continue
        got = x.get("puts")
        puts: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
        writes = [(str(k), fmt_value(with_times(v, origin))) for k, v in puts.items()]
        writes += [(str(k), "deleted") for k in x.get("deletes") or []]
        ops.append(([e(x.get("revision", "?"))], writes or [("", "")]))
    head = "".join(f"<th>{h}</th>" for h in ("revision", "key", "value"))
    return (
        f'<table class="grid ops"><thead><tr>{head}</tr></thead><tbody>{_rows(ops)}</tbody></table>'
    )


def _gist(v: Any) -> str:
    """What a folded field holds, in a line: its items' count, or each key's."""
    if isinstance(v, list):
        return f"{len(v)} items"
    if isinstance(v, Mapping) and len(v) <= 4:
        return ", ".join(
            f"{k}: {len(x)} items" if isinstance(x, Mapping | list) else f"{k} {fmt_value(x)}"
            for k, x in v.items()
        )
    if isinstance(v, Mapping):
        counts = Counter(fmt_value(x) for x in v.values() if not isinstance(x, Mapping | list))
        if len(counts) == len(v) or len(counts) > 4 or sum(counts.values()) < len(v):
            return f"{len(v)} entries"
        return f"{len(v)} entries (" + ", ".join(f"{k} {n}" for k, n in counts.items()) + ")"
    return fmt_value(v)


def _journal(j: Mapping[str, Any], origin: float | None) -> str:
    entries = [x for x in j.get("entries") or [] if isinstance(x, Mapping)]
    nodes = j.get("nodes")
    per = (
        " (" + ", ".join(f"{n} {c}" for n, c in nodes.items()) + ")"
        if isinstance(nodes, Mapping) and nodes
        else ""
    )
    rest = {
        k: v for k, v in j.items() if k not in ("entries", "nodes") and v not in (None, [], {}, "")
    }
    summary = f"{len(entries)} operation(s) the services sent to etcd{per}"
    return (
        kv_table(rest, cls="kv nested") if rest else ""
    ) + f"<details><summary>{e(summary)}</summary>{journal_table(entries, origin)}</details>"


def _record(r: Mapping[str, Any], origin: float | None) -> str:
    txns = [x for x in r.get("txns") or [] if isinstance(x, Mapping)]
    rest = {k: v for k, v in r.items() if k != "txns" and v not in (None, [], {}, "")}
    summary = f"{len(txns)} transaction(s) in etcd's own history"
    return (
        kv_table(rest, cls="kv nested") if rest else ""
    ) + f"<details><summary>{e(summary)}</summary>{record_table(txns, origin)}</details>"


def final_section(final: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    """The Final state section: a row per top-level field; the journal and the record as tables
    of operations; a field of many items folded under its count."""
    origin = run_origin(final, spec)
    rows: list[str] = []
    for k, v in final.items():
        if k == "journal" and isinstance(v, Mapping) and isinstance(v.get("entries"), list):
            cell = _journal(v, origin)
        elif k == "record" and isinstance(v, Mapping) and isinstance(v.get("txns"), list):
            cell = _record(v, origin)
        else:
            cell = value_cell(with_times(v, origin))
            if cell.count("<tr") + cell.count("<li") > FOLD_ROWS:
                cell = f"<details><summary>{e(_gist(v))}</summary>{cell}</details>"
        rows.append(f"<tr><th>{e(k)}</th><td>{cell}</td></tr>")
    note = (
        '<p class="muted">Times are seconds into the run.</p>'
        if origin is not None
        else '<p class="muted">The run\'s start is not recorded: wall-clock times are UTC.</p>'
    )
    return note + f'<table class="kv final">{"".join(rows)}</table>'
