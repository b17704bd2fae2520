"""A per-task sequence diagram (inline SVG): lanes for the client, the API, etcd, the relay, the
broker and each worker replica; one arrow per hop; crashes as marks; nemesis intervals as bands
across the lanes of the process or node they hit.

Rows follow the order of events rather than a linear time axis: a task's hops are milliseconds
apart while the fault that matters lasts seconds, and a linear scale would stack the hops on top
of each other. Each row carries its time, and long gaps are marked. The order is happens-before
(chaos.report.causal: etcd's revisions, the broker's order, request→answer), not the nodes'
stamps: a row stamped earlier than a row above it says so.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chaos.report.causal import Key, causal_times
from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand
from chaos.report.html import e, fmt_value
from chaos.report.loading import EventLike, event_json
from chaos.report.tasks import TaskView

LEFT = 96
LANE_W = 150
# The page's content is about 1,200 px wide: lanes narrow down to MIN_LANE_W to fit it, and a
# diagram with more lanes than that is scaled by the page (max-width), never cut off.
FIT_WIDTH = 1180
MIN_LANE_W = 104
TOP = 46
ROW_H = 26
MAX_ROWS = 160
GAP = 1.0  # seconds of silence worth marking in a diagram
# stamps this close are not called out of order (a stamp is printed to the millisecond)
STAMP_SLACK = 5e-4
BROKER_PROCESSES = ("nats", "nats-server", "broker", "jetstream")

INK = "#222"
OK_COLOUR = "#2b7a3d"
BAD_COLOUR = "#c62828"
SOFT = "#5c6bc0"


@dataclass(frozen=True, slots=True)
class Step:
    time: float
    src: str
    dst: str | None  # None: a note on ``src`` rather than an arrow
    label: str
    colour: str = INK
    dashed: bool = False
    mark: str = ""  # "x" crash / lost message, "d" fault point
    tip: str = ""
    # the time was not recorded, only bounded: drawn just before the first effect it had
    approx: bool = False
    # its node's own stamp (``time`` is where the happens-before order draws it)
    stamp: float | None = None


def _lane(ev: EventLike) -> str:
    return f"{ev.component}@{ev.node}"


def _steps(view: TaskView) -> list[Step]:
    at = causal_times(view.events, view.ops, view.writes)
    steps = _op_steps(view, at) + _event_steps(view, at)
    steps.sort(key=lambda s: s.time)
    return steps


def _placed(step: Step, stamp: float, key: Key, at: dict[Key, float]) -> Step:
    """``step`` at its causal time, keeping its own stamp."""
    return replace(step, time=at.get(key, stamp), stamp=stamp)


def _out_of_clock_order(steps: list[Step]) -> set[int]:
    """The ``id`` of each step whose stamp is earlier than a step's above it or later than a
    step's below it: the rows the causal order put elsewhere than their clocks would."""
    stamped = [(s, s.stamp) for s in steps if s.stamp is not None]
    out: set[int] = set()
    high = float("-inf")
    for s, t in stamped:
        if t < high - STAMP_SLACK:
            out.add(id(s))
        high = max(high, t)
    low = float("inf")
    for s, t in reversed(stamped):
        if t > low + STAMP_SLACK:
            out.add(id(s))
        low = min(low, t)
    return out


def _op_steps(view: TaskView, at: dict[Key, float]) -> list[Step]:
    """The client's calls to the api and their answers (with any retry on another node)."""
    steps: list[Step] = []
    api_of_task = next((_lane(x) for x in view.events if x.component == "api"), "api")
    for k, op in enumerate(view.ops):
        api = f"api@{op.node}" if op.node else api_of_task
        args = op.value if isinstance(op.value, dict) else {}
        shown = ", ".join(f"{k}={v}" for k, v in args.items() if k != "task_id")
        first = str(op.retried[0].get("node", "")) if op.retried else ""
        call = f"api@{first}" if first else api
        ask = Step(op.start, "client", call, f"{op.f}({shown})", tip=fmt_value(op.value))
        steps.append(_placed(ask, op.start, ("op", k, "start"), at))
        steps.extend(_retries(op, view, api_of_task, at))
        if not op.completed:
            continue
        colour = {"ok": OK_COLOUR, "fail": BAD_COLOUR}.get(op.type, "#b26a00")
        what = op.type if not op.error else f"{op.type}: {op.error}"
        answer = Step(
            op.end, api, "client", what, colour=colour, dashed=op.type != "ok",
            tip=fmt_value(op.result),
        )  # fmt: skip
        steps.append(_placed(answer, op.end, ("op", k, "end"), at))
    return steps


def _event_steps(view: TaskView, at: dict[Key, float]) -> list[Step]:
    """What the services reported, as arrows between lanes, each at its causal time (the
    second commit in that order marked AGAIN)."""
    steps: list[Step] = []
    commits = 0
    for i in sorted(range(len(view.events)), key=lambda j: (at.get(j, view.events[j].time), j)):
        ev = view.events[i]
        commits += ev.kind == "commit"
        steps.append(_placed(_event_step(ev, again=commits > 1), ev.time, i, at))
    return steps


def _event_step(ev: EventLike, *, again: bool) -> Step:
    """One event as its arrow or note (``again``: a commit after the task's first)."""
    lane, d, t, k = _lane(ev), ev.data, ev.time, ev.kind
    tip = fmt_value(event_json(ev))
    if k == "task-accepted":
        return Step(t, lane, "etcd", "txn: task + idem + outbox", tip=tip)
    if k == "publish":
        attempt = d.get("attempt")
        verb = "republish" if isinstance(attempt, int) and attempt > 1 else "publish"
        seq = f" → seq {d['stream_seq']}" if d.get("stream_seq") is not None else ""
        n = f" #{attempt}" if attempt is not None else ""
        return Step(t, lane, "broker", f"{verb}{n}{seq}", tip=tip)
    if k == "publish-ack-lost":
        return Step(t, "broker", lane, "publish ACK lost", BAD_COLOUR, True, "x", tip)
    if k == "marked-published":
        return Step(t, lane, "etcd", "mark outbox published", tip=tip)
    if k == "delivery":
        num = d.get("num_delivered")
        verb = "redeliver" if isinstance(num, int) and num > 1 else "deliver"
        n = f" #{num}" if num is not None else ""
        return Step(t, "broker", lane, f"{verb}{n}", SOFT, tip=tip)
    if k == "commit":
        parts = [f"+{d['amount']}"] if d.get("amount") is not None else []
        if d.get("counter") is not None:
            parts.append(f"counter={d['counter']}")
        label = "commit " + " ".join(parts)
        if again:
            return Step(t, lane, "etcd", f"⚠ {label} AGAIN", BAD_COLOUR, tip=tip)
        return Step(t, lane, "etcd", label, OK_COLOUR, tip=tip)
    if k == "suppressed":
        return Step(t, lane, "etcd", "dedup hit: suppressed", OK_COLOUR, True, tip=tip)
    if k == "ack":
        return Step(t, lane, "broker", "ACK", tip=tip)
    if k == "crash":
        label = f"crash ({d['fault']})" if d.get("fault") else "crash"
        return Step(t, lane, None, label, BAD_COLOUR, mark="x", tip=tip)
    if k == "fault-point":
        label = f"fault point {d.get('point', '')}".strip()
        return Step(t, lane, None, label, "#6a1b9a", mark="d", tip=tip)
    return Step(t, lane, None, k, "#555", tip=tip)


def _retries(
    op: ClientOp, view: TaskView, api_of_task: str, causal: dict[Key, float]
) -> list[Step]:
    """Each earlier attempt's lost answer, then the retry on the next node.

    The client records only when the op began and ended, not when it gave up on an attempt: a
    retry is drawn just before the first event its node logged for the task (it must have
    arrived by then), else just before the op's answer, and its time is marked as a bound.
    """
    out: list[Step] = []
    nodes = [str(a.get("node", "")) for a in op.retried] + [op.node or ""]
    after = causal.get(("op", view.ops.index(op), "start"), op.start)
    for i, attempt in enumerate(op.retried):
        lane = f"api@{nodes[i]}" if nodes[i] else api_of_task
        nxt = f"api@{nodes[i + 1]}" if nodes[i + 1] else api_of_task
        seen = [
            causal.get(j, x.time)
            for j, x in enumerate(view.events)
            if _lane(x) == nxt and causal.get(j, x.time) > after
        ]
        at = max(after, min(seen, default=op.end if op.completed else after + 1e-3) - 2e-6)
        what = str(attempt.get("outcome") or "no answer")
        err = str(attempt.get("error") or "")
        label = f"{what}: {err}" if err else what
        if len(label) > 40:
            label = label[:39] + "…"
        tip = fmt_value(attempt)
        out.append(Step(at, lane, "client", label, "#b26a00", True, "x", tip, approx=True))
        out.append(
            Step(
                at + 1e-6,
                "client",
                nxt,
                f"retry {op.f} (attempt {i + 2})",
                SOFT,
                tip=tip,
                approx=True,
            )
        )
        after = at + 1e-6
    return out


def _lanes(steps: list[Step]) -> list[str]:
    used = {s.src for s in steps} | {s.dst for s in steps if s.dst}

    def rank(lane: str) -> tuple[int, str]:
        comp = lane.split("@")[0]
        order = {"client": 0, "api": 1, "etcd": 2, "relay": 3, "broker": 4, "worker": 5}
        return order.get(comp, 6), lane

    return sorted(used, key=rank)


def _band_lanes(band: FaultBand, lanes: list[str]) -> list[str]:
    hit = []
    for lane in lanes:
        comp, _, node = lane.partition("@")
        if lane == "etcd":
            ok = band.process == "etcd"
        elif lane == "broker":
            ok = band.process in BROKER_PROCESSES
        elif lane == "client":
            ok = False
        else:
            node_ok = not band.nodes or node in band.nodes
            proc_ok = band.process is None or band.process.startswith(comp)
            ok = node_ok and proc_ok and bool(band.nodes or band.process)
        if ok:
            hit.append(lane)
    return hit


def fault_hits(view: TaskView) -> list[FaultBand]:
    """The faults that stopped a lane this task's diagram draws (not merely overlapped it)."""
    lanes = _lanes(_steps(view))
    return [b for b in view.bands if _band_lanes(b, lanes)]


def sequence_svg(view: TaskView, title: str = "") -> str:
    steps = _steps(view)
    truncated = len(steps) > MAX_ROWS
    steps = steps[:MAX_ROWS]
    lanes = _lanes(steps) or ["client"]
    t0 = steps[0].time if steps else view.start
    t1 = steps[-1].time if steps else view.end
    # Band boundaries inside the window become rows of their own, so a reader sees exactly where
    # the pause began and ended among the task's hops.
    rows: list[tuple[float, Step | None, str]] = [(s.time, s, "") for s in steps]
    for b in view.bands:
        if t0 <= b.start <= t1:
            rows.append((b.start, None, f"⚡ {b.label} begins"))
        if t0 <= b.end <= t1 and not b.open:
            rows.append((b.end, None, f"⚡ {b.label} healed"))
    rows.sort(key=lambda r: (r[0], r[1] is not None))

    lane_w = max(MIN_LANE_W, min(LANE_W, (FIT_WIDTH - LEFT - 10) // len(lanes)))
    x_of = {lane: LEFT + i * lane_w + lane_w // 2 for i, lane in enumerate(lanes)}
    # A long quiet stretch gets extra room for its "+4.68 s" mark.
    ys: list[float] = []
    y = float(TOP)
    for i, r in enumerate(rows):
        y += ROW_H * (1.6 if i and r[0] - rows[i - 1][0] >= GAP else 1)
        ys.append(y)
    height = int(y + ROW_H + 10)
    width = LEFT + len(lanes) * lane_w + 10
    times = [r[0] for r in rows]

    def y_at(t: float) -> float:
        if not rows or t <= times[0]:
            return TOP + 4 if not rows or t < times[0] else ys[0]
        if t >= times[-1]:
            return ys[-1] if t == times[-1] else height - 6
        i = bisect_left(times, t)
        if times[i] == t:
            return ys[i]
        a, b = times[i - 1], times[i]
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (t - a) / (b - a)

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="seq" data-task="{e(view.task_id)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="system-ui,sans-serif" font-size="11">',
        f"<title>{e(title or 'task ' + view.task_id)}</title>",
        _markers({s.colour for s in steps}),
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
    ]
    out += _band_rects(view, y_at, lanes, x_of, lane_w)
    out += _lane_heads(x_of, lane_w, height)
    out += _row_marks(rows, ys, x_of, width)
    if truncated:
        out.append(
            f'<text x="{LEFT}" y="{height - 4}" fill="#c62828">… more events not shown</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _band_rects(
    view: TaskView,
    y_at: Callable[[float], float],
    lanes: list[str],
    x_of: dict[str, int],
    lane_w: int,
) -> list[str]:
    """Each fault band, on the lanes it stopped, from its start to its heal."""
    out: list[str] = []
    for b in view.bands:
        y0, y1 = y_at(b.start), y_at(b.end)
        hit = _band_lanes(b, lanes)
        # only on the lanes it stopped: a band in the margin would cover the time labels, and
        # a fault that touched none of this task's lanes is told by its begin/heal rows alone
        xs = [(x_of[lane] - lane_w // 2 + 4, lane_w - 8) for lane in hit]
        tip = f"{b.label} ({b.fault_id}) {b.start:.3f} to {b.end:.3f} s" + (
            " never healed" if b.open else ""
        )
        for x, w in xs:
            out.append(
                f'<rect x="{x}" y="{y0:.1f}" width="{w}" height="{max(y1 - y0, 3):.1f}" '
                f'fill="{b.colour}" fill-opacity="0.35" stroke="{b.colour}">'
                f"<title>{e(tip)}</title></rect>"
            )
            if y1 - y0 > 14:
                out.append(
                    f'<text x="{x + w - 4}" y="{y0 + 12:.1f}" text-anchor="end" font-size="10" '
                    f'fill="#7a4a00">{e(b.fault)}</text>'
                )
    return out


def _lane_heads(x_of: dict[str, int], lane_w: int, height: int) -> list[str]:
    """Each lane's dashed line and its name at the top."""
    out: list[str] = []
    for lane, x in x_of.items():
        out.append(
            f'<line x1="{x}" y1="{TOP - 8}" x2="{x}" y2="{height - 6}" stroke="#bbb" '
            'stroke-dasharray="2,3"/>'
        )
        out.append(
            f'<rect x="{x - lane_w // 2 + 6}" y="6" width="{lane_w - 12}" height="24" rx="4" '
            'fill="#eef2f7" '
            'stroke="#8fa3bf"/>'
            f'<text x="{x}" y="22" text-anchor="middle" font-weight="600">{e(lane)}</text>'
        )
    return out


def _row_marks(
    rows: list[tuple[float, Step | None, str]], ys: list[float], x_of: dict[str, int], width: int
) -> list[str]:
    """Each row: its time, a gap mark before a long quiet stretch, and its arrow or band note."""
    out: list[str] = []
    prev_t: float | None = None
    moved = _out_of_clock_order([r[1] for r in rows if r[1] is not None])
    for (t, step, label), y in zip(rows, ys, strict=True):
        if prev_t is not None and t - prev_t >= GAP:
            mid = y - ROW_H * 0.8
            out.append(
                f'<line x1="4" x2="{width - 4}" y1="{mid:.1f}" y2="{mid:.1f}" '
                'stroke="#ccc" stroke-dasharray="6,4"/>'
                f'<text x="{LEFT - 6}" y="{mid + 3:.1f}" fill="#888" font-size="10" '
                f'text-anchor="end" paint-order="stroke" stroke="#fff" stroke-width="3">'
                f"+{t - prev_t:.2f} s</text>"
            )
        prev_t = t
        out.append(_when(t, step, y, moved=step is not None and id(step) in moved))
        if step is None:
            out.append(
                f'<text x="{LEFT}" y="{y + 4}" fill="#8a4b00" font-style="italic">{e(label)}</text>'
            )
            continue
        out.append(_draw(step, x_of, y))
    return out


def _when(t: float, step: Step | None, y: float, *, moved: bool = False) -> str:
    """A row's time: its node's stamp; a row out of its clock's order says so (``moved``)."""
    if step is not None and step.stamp is not None and moved:
        node = next((x.partition("@")[2] for x in (step.src, step.dst or "") if "@" in x), "")
        why = (
            f"stamped {step.stamp:.3f} s by {node or 'its'}'s clock when logged; drawn where "
            "etcd's revisions, the broker's order and request and answer put it, not where "
            "the clocks would"
        )
        return (
            f'<text x="6" y="{y + 4}" fill="#b26a00"><title>{e(why)}</title>'
            f"{step.stamp:.3f} s ↕</text>"
        )
    if step is not None and step.stamp is not None and not step.approx:
        t = step.stamp
    when = f"≤{t:.3f} s" if step is not None and step.approx else f"{t:.3f} s"
    return f'<text x="6" y="{y + 4}" fill="#666">{when}</text>'


def _marker_id(colour: str) -> str:
    return "seq-ah-" + colour.lstrip("#")


def _markers(colours: set[str]) -> str:
    # One arrowhead per colour: ``context-stroke`` would be shorter but older browsers ignore it.
    # Ids repeat across diagrams of one page with identical content, which is harmless.
    marks = "".join(
        f'<marker id="{_marker_id(c)}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="{c}"/>'
        "</marker>"
        for c in sorted(colours)
    )
    return f"<defs>{marks}</defs>"


def _draw(s: Step, x_of: dict[str, int], y: float) -> str:
    x1 = x_of[s.src]
    tip = f"<title>{e(s.tip)}</title>" if s.tip else ""
    halo = 'paint-order="stroke" stroke="#fff" stroke-width="3"'
    if s.dst is None or s.dst == s.src:
        mark = ""
        if s.mark == "x":
            mark = (
                f'<path d="M{x1 - 6},{y - 6}L{x1 + 6},{y + 6}M{x1 - 6},{y + 6}L{x1 + 6},{y - 6}" '
                f'stroke="{s.colour}" stroke-width="3"/>'
            )
        else:
            shape = f"M{x1},{y - 6}L{x1 + 6},{y}L{x1},{y + 6}L{x1 - 6},{y}z"
            mark = f'<path d="{shape}" fill="{s.colour}"/>'
        return (
            f'<g>{tip}{mark}<text x="{x1 + 10}" y="{y + 4}" fill="{s.colour}" {halo}>'
            f"{e(s.label)}</text></g>"
        )
    x2 = x_of[s.dst]
    dash = ' stroke-dasharray="5,3"' if s.dashed else ""
    end = x2 - 3 if x2 > x1 else x2 + 3
    lost = ""
    if s.mark == "x":
        # The message never arrived: stop the arrow halfway and cross it out.
        end = (x1 + x2) // 2
        lost = (
            f'<path d="M{end - 5},{y - 5}L{end + 5},{y + 5}M{end - 5},{y + 5}L{end + 5},{y - 5}" '
            f'stroke="{s.colour}" stroke-width="2"/>'
        )
        head = ""
    else:
        head = f' marker-end="url(#{_marker_id(s.colour)})"'
    mid = (x1 + x2) / 2
    return (
        f'<g>{tip}<line x1="{x1}" y1="{y}" x2="{end}" y2="{y}" stroke="{s.colour}" '
        f'stroke-width="1.5"{dash}{head}/>{lost}'
        f'<text x="{mid:.1f}" y="{y - 4}" text-anchor="middle" fill="{s.colour}" {halo}>'
        f"{e(s.label)}</text></g>"
    )


def step_rows(view: TaskView) -> list[list[Any]]:
    """The same hops as a table, in the diagram's order: time (the node's stamp), where, kind,
    what (the lab's event excerpt)."""
    at = causal_times(view.events, view.ops, view.writes)
    rows: list[list[Any]] = []
    order = sorted(range(len(view.events)), key=lambda j: (at.get(j, view.events[j].time), j))
    for ev in (view.events[j] for j in order):
        detail = dict(ev.data)
        if ev.event_id:
            detail = {"event_id": ev.event_id, **detail}
        rows.append([f"{ev.time:.3f}", _lane(ev), ev.kind, detail or ""])
    return rows
