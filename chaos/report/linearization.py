"""A failed linearizability check as a picture: the longest linearizable prefix and the ops that
cannot follow it, as Knossos and Porcupine draw them.

Reads only the anomaly's data (``prefix``, ``op``, ``cannot_follow``, ``state``, as
:mod:`chaos.checkers.linearizable` writes them): one lane per process, each op a bar from its
invocation to its completion (history positions), the prefix's ops green and numbered in their
linearization order, the ops that cannot follow red, an op that never completed open-ended.
"""

from __future__ import annotations

from typing import Any

from chaos.report.html import e, table

__all__ = ["linearization_section", "linearization_svg"]

_LANE, _LEFT, _WIDTH = 26, 110, 820
_PREFIX, _CANNOT = "#2e8b3a", "#c0392b"


def _ops(anomaly: dict[str, Any]) -> list[tuple[dict[str, Any], str, str]]:
    """(op, colour, label) for each op drawn: the prefix in order, then those that cannot
    follow (the blocked op among them)."""
    drawn: list[tuple[dict[str, Any], str, str]] = []
    prefix = anomaly.get("prefix") or []
    first = int(anomaly.get("prefix_length", len(prefix))) - len(prefix) + 1
    for n, op in enumerate(prefix):
        drawn.append((op, _PREFIX, str(first + n)))
    cannot = anomaly.get("cannot_follow") or [anomaly.get("op") or {}]
    for op in cannot:
        drawn.append((op, _CANNOT, "✗"))
    return [d for d in drawn if isinstance(d[0], dict) and "invoke_index" in d[0]]


def linearization_svg(anomaly: dict[str, Any]) -> str | None:
    """The timeline figure, or None when the ops carry no history positions."""
    drawn = _ops(anomaly)
    if not drawn:
        return None
    starts = [int(op["invoke_index"]) for op, _, _ in drawn]
    ends = [int(op.get("completion_index") or op["invoke_index"]) for op, _, _ in drawn]
    lo, hi = min(starts), max(max(ends), max(starts) + 1)
    open_end = hi + max(1, (hi - lo) // 20)
    lanes = sorted({str(op.get("process")) for op, _, _ in drawn}, key=_lane_key)
    row = {p: i for i, p in enumerate(lanes)}
    h = _LANE * len(lanes) + 40

    def x(pos: float) -> float:
        return _LEFT + (pos - lo) / (open_end - lo) * (_WIDTH - _LEFT - 20)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="linearization" width="{_WIDTH}" '
        f'height="{h}" viewBox="0 0 {_WIDTH} {h}" role="img" aria-label="linearization">'
    ]
    for p, i in row.items():
        parts.append(
            f'<text x="4" y="{i * _LANE + 36}" font-size="12">process {e(p)}</text>'
            f'<line x1="{_LEFT}" y1="{i * _LANE + 40}" x2="{_WIDTH - 10}" '
            f'y2="{i * _LANE + 40}" stroke="#eee"/>'
        )
    for op, colour, label in drawn:
        done = op.get("completion_index")
        x1 = x(int(op["invoke_index"]))
        x2 = x(int(done)) if done is not None else x(open_end)
        y = row[str(op.get("process"))] * _LANE + 24
        dash = "" if done is not None else ' stroke-dasharray="4 3"'
        parts.append(
            f"<g><title>{e(op.get('op', ''))} (op {e(op['invoke_index'])}"
            f" to {e(done if done is not None else 'never completed')})</title>"
            f'<rect x="{x1:.1f}" y="{y}" width="{max(x2 - x1, 3):.1f}" height="16" rx="3" '
            f'fill="{colour}" fill-opacity="0.25" stroke="{colour}"{dash}/>'
            f'<text x="{x1 + 3:.1f}" y="{y + 12}" font-size="11">{e(label)}'
            # the prefix's ops are many and short: their number, the op in the tooltip
            f"{'' if colour == _PREFIX else ' ' + e(op.get('op', ''))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _lane_key(p: str) -> tuple[int, int | str]:
    return (0, int(p)) if p.lstrip("-").isdigit() else (1, p)


def _rows(ops: list[dict[str, Any]], first: int | None) -> list[list[Any]]:
    return [
        [
            "" if first is None else first + n,
            op.get("op", ""),
            op.get("process", ""),
            op.get("invoke_index", ""),
            op.get("completion_index", "never"),
            op.get("type", ""),
        ]
        for n, op in enumerate(ops)
    ]


def linearization_section(anomaly: dict[str, Any]) -> str:
    """The anomaly's page section: the picture, the state the prefix reached, the ops that cannot
    follow it, and the prefix in its linearization order."""
    prefix = anomaly.get("prefix") or []
    length = int(anomaly.get("prefix_length", len(prefix)))
    cannot = anomaly.get("cannot_follow") or [anomaly.get("op") or {}]
    head = ["#", "op", "process", "invoked (op)", "completed (op)", "type"]
    key = anomaly.get("key")
    shown = f" (its last {len(prefix)} shown)" if anomaly.get("prefix_truncated") else ""
    return (
        f"<h2>Not linearizable{'' if key is None else ' on key ' + e(key)}</h2>"
        f"<p>The longest linearizable prefix holds <b>{length}</b> ops{e(shown)}; it leaves "
        f"the object in state <code>{e(anomaly.get('state'))}</code>, in which none of the "
        f"ops below can take effect next (red), and no other order goes further.</p>"
        + (linearization_svg(anomaly) or "")
        + "<h3>Ops that cannot follow the prefix</h3>"
        + table(head, _rows(cannot, None))
        + "<h3>The prefix, in linearization order</h3>"
        + table(head, _rows(prefix, length - len(prefix) + 1))
    )
