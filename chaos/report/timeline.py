"""The timeline: client ops per process as bars, nemesis bands, system events as marks.

Drawn by a small inline script on a <canvas>: a DOM node per op would make a 100k-op page
unusable. The data goes in compact columns — times in tenths of a millisecond, delta-encoded — so
that a large run stays a few megabytes; hover detail is looked up by binary search in the script.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand
from chaos.report.html import e, fmt_value, script_json
from chaos.report.loading import EventLike

TYPES = ("ok", "fail", "info")
UNIT = 10_000  # ticks per second: 0.1 ms resolution
VALUE_CHARS = 90


def _time(ev: EventLike) -> float:
    return ev.time


def _ticks(t: float) -> int:
    return round(t * UNIT)


def _short(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dict):
        s = " ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    elif isinstance(v, str):
        s = v
    else:
        s = fmt_value(v)
    return s if len(s) <= VALUE_CHARS else s[: VALUE_CHARS - 1] + "…"


def _lane_key(p: int | str) -> tuple[int, int | str]:
    return (0, p) if isinstance(p, int) else (1, str(p))


def timeline_data(
    ops: list[ClientOp], bands: list[FaultBand], events: Sequence[EventLike], end_time: float
) -> dict[str, Any]:
    return {
        "unit": UNIT,
        "end": _ticks(end_time),
        **_op_columns(ops),
        "bands": [
            [_ticks(b.start), _ticks(b.end), b.fault, b.label, b.colour, int(b.open), b.fault_id]
            for b in bands
        ],
        **_event_columns(events),
    }


def _op_columns(ops: list[ClientOp]) -> dict[str, Any]:
    """The client ops as columns, lane by lane (a process per lane), times as deltas in ticks."""
    procs = sorted({op.process for op in ops}, key=_lane_key)
    lane_of = {p: i for i, p in enumerate(procs)}
    fs = sorted({op.f for op in ops})
    f_of = {f: i for i, f in enumerate(fs)}
    ordered = sorted(ops, key=lambda o: (lane_of[o.process], o.start, o.index))
    lane_start = [0] * (len(procs) + 1)
    starts: list[int] = []
    durs: list[int] = []
    prev = 0
    for op in ordered:
        lane_start[lane_of[op.process] + 1] += 1
        s = round(op.start * UNIT)
        starts.append(s - prev)
        prev = s
        durs.append(max(0, round(op.end * UNIT) - s))
    for i in range(len(procs)):
        lane_start[i + 1] += lane_start[i]
    values = []
    for op in ordered:
        v = _short(op.value)
        if op.completed and op.result is not None and op.result != op.value:
            v = f"{v} → {_short(op.result)}" if v else _short(op.result)
        if op.error:
            v = f"{v} · {op.error}" if v else op.error
        values.append(v)
    return {
        "lanes": [str(p) for p in procs],
        "laneStart": lane_start,
        "fs": fs,
        "types": list(TYPES),
        "s": starts,
        "d": durs,
        "f": [f_of[o.f] for o in ordered],
        "t": [TYPES.index(o.type) if o.type in TYPES else 2 for o in ordered],
        "i": [o.index for o in ordered],
        "v": values,
    }


def _event_columns(events: Sequence[EventLike]) -> dict[str, Any]:
    """The services' events as columns, lane by lane (a node per lane)."""
    # Events arrive sorted by time; bucketing them by node keeps that order within each lane
    # without a second sort of a quarter-million records.
    by_node: dict[str, list[EventLike]] = {}
    for ev in events:
        by_node.setdefault(ev.node, []).append(ev)
    nodes = sorted(by_node)
    kinds = sorted({ev.kind for ev in events})
    kind_of = {k: i for i, k in enumerate(kinds)}
    comps = sorted({ev.component for ev in events})
    comp_of = {c: i for i, c in enumerate(comps)}
    evs = [ev for n in nodes for ev in sorted(by_node[n], key=_time)]
    ev_start = [0]
    for n in nodes:
        ev_start.append(ev_start[-1] + len(by_node[n]))
    ev_t: list[int] = []
    prev = 0
    for ev in evs:
        t = round(ev.time * UNIT)
        ev_t.append(t - prev)
        prev = t
    return {
        "evLanes": nodes,
        "evStart": ev_start,
        "kinds": kinds,
        "et": ev_t,
        "ek": [kind_of[x.kind] for x in evs],
        "comps": comps,
        "ec": [comp_of[x.component] for x in evs],
        "eTask": [x.task_id or "" for x in evs],
    }


def timeline_html(data: dict[str, Any]) -> str:
    script = resources.files("chaos.report").joinpath("assets/timeline.js").read_text("utf-8")
    n = len(data["i"])
    legend = (
        '<span class="sw ok"></span>ok <span class="sw fail"></span>fail '
        '<span class="sw info"></span>info (unknown) '
        + " ".join(
            f'<span class="sw" style="background:{e(b[4])}"></span>{e(b[2])}'
            for b in {b[2]: b for b in data["bands"]}.values()
        )
    )
    return (
        f'<div class="tl-controls"><button type="button" data-zoom="in">+</button>'
        f'<button type="button" data-zoom="out">&minus;</button>'
        f'<button type="button" data-zoom="reset">reset</button> '
        f'<span class="muted">{n} ops · wheel to zoom, drag to pan, double-click to reset</span> '
        f'<span class="legend">{legend}</span></div>'
        f'<div class="tl-wrap" id="timeline-wrap"><canvas id="tl-canvas" data-ops="{n}">'
        "The timeline needs JavaScript.</canvas>"
        '<div id="tl-tip" class="tl-tip" hidden></div></div>'
        '<div class="legend muted">system events: <span id="tl-kinds"></span></div>'
        + script_json("timeline-data", data)
        + f"<script>{script}</script>"
    )
