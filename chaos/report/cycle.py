"""A transactional anomaly's cycle as a small SVG: transactions on a circle, one arrow per
dependency, coloured by kind and labelled with its key.

Reads only the anomaly's data (``txns`` and ``steps``, as :mod:`chaos.checkers.elle.explain`
writes them); every text is escaped, since keys and values come from the history.
"""

from __future__ import annotations

import math
from typing import Any

from chaos.report.html import e

__all__ = ["cycle_svg"]

MAX_NODES = 12
_COLOUR = {
    "ww": "#1f5fbf",
    "wr": "#2e8b3a",
    "rw": "#c0392b",
    "process": "#777",
    "realtime": "#d68910",
}


def _label(step: dict[str, Any]) -> str:
    kind = str(step.get("type", "?"))
    return f"{kind} {step['key']}" if "key" in step else kind


def cycle_svg(anomaly: dict[str, Any]) -> str | None:
    """The figure, or None when the anomaly holds no drawable cycle."""
    txns, steps = anomaly.get("txns"), anomaly.get("steps")
    if not isinstance(txns, list) or not isinstance(steps, list) or not txns:
        return None
    n = len(txns)
    if n > MAX_NODES or len(steps) != n or not all(isinstance(t, dict) for t in txns):
        return None
    w, h, radius, node = 380, 300, 100.0 if n > 2 else 80.0, 24.0
    cx, cy = w / 2, h / 2
    pos = [
        (
            cx + radius * math.cos(-math.pi / 2 + 2 * math.pi * i / n),
            cy + radius * math.sin(-math.pi / 2 + 2 * math.pi * i / n),
        )
        for i in range(n)
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="cycle" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(anomaly.get("type", "cycle"))}">',
        "<defs>",
    ]
    for kind, colour in _COLOUR.items():
        parts.append(
            f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{colour}"/></marker>'
        )
    parts.append("</defs>")
    if not all(isinstance(step, dict) for step in steps):
        return None
    for i, step in enumerate(steps):
        parts += _arrow(step, pos[i], pos[(i + 1) % n], (cx, cy), n, node)
    for (x, y), t in zip(pos, txns, strict=True):
        parts.append(
            f'<g><title>{e(t.get("text", t.get("value", "")))}</title><circle cx="{x:.1f}" cy="{y:.1f}" '
            f'r="{node}" fill="#fff" stroke="#333" stroke-width="1.5"/>'
            f'<text x="{x:.1f}" y="{y - 2:.1f}" font-size="13" text-anchor="middle" '
            f'font-weight="bold">{e(t.get("name", "?"))}</text>'
            f'<text x="{x:.1f}" y="{y + 12:.1f}" font-size="10" text-anchor="middle">'
            f"op {e(t.get('index', '?'))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _arrow(
    step: dict[str, Any],
    start: tuple[float, float],
    end: tuple[float, float],
    centre: tuple[float, float],
    n: int,
    node: float,
) -> list[str]:
    """One step of the cycle: a curved arrow between two transactions' circles, and its label."""
    (x1, y1), (x2, y2), (cx, cy) = start, end, centre
    out: list[str] = []
    dx, dy = x2 - x1, y2 - y1
    d = math.hypot(dx, dy) or 1.0
    ux, uy = dx / d, dy / d
    # start and end on the circles' rims; bend outwards so that a 2-cycle's arrows part
    # the two arrows of a 2-cycle leave and reach each rim apart
    side = 0.35 if n == 2 else 0.0
    px, py = (
        ux * math.cos(side) + uy * math.sin(side),
        uy * math.cos(side) - ux * math.sin(side),
    )
    qx_, qy_ = (
        ux * math.cos(side) - uy * math.sin(side),
        uy * math.cos(side) + ux * math.sin(side),
    )
    sx, sy = x1 + px * node, y1 + py * node
    ex, ey = x2 - qx_ * node, y2 - qy_ * node
    mx, my = (sx + ex) / 2, (sy + ey) / 2
    ox, oy = mx - cx, my - cy
    o = math.hypot(ox, oy)
    bend = 28.0
    if o < 1e-6:  # a chord through the centre (n == 2): bend to the left of travel
        ox, oy, o = uy, -ux, 1.0
    qx, qy = mx + ox / o * bend, my + oy / o * bend
    kind = str(step.get("type", "ww"))
    colour = _COLOUR.get(kind, "#333")
    marker = f"arrow-{kind}" if kind in _COLOUR else "arrow-ww"
    dash = ' stroke-dasharray="4 3"' if kind in ("process", "realtime") else ""
    out.append(
        f'<path d="M{sx:.1f},{sy:.1f} Q{qx:.1f},{qy:.1f} {ex:.1f},{ey:.1f}" fill="none" '
        f'stroke="{colour}" stroke-width="2"{dash} marker-end="url(#{marker})">'
        f"<title>{e(step.get('text', ''))}</title></path>"
    )
    lx, ly = mx + ox / o * (bend + 12), my + oy / o * (bend + 12)
    out.append(
        f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="12" text-anchor="middle" '
        f'fill="{colour}">{e(_label(step))}</text>'
    )
    return out
