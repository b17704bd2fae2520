"""Node clocks: how sure the report can be of the order of events from different machines.

A run on machines with clocks of their own (the SSH backend) stores each node's offset against the
orchestrator and its uncertainty in ``live/clocks.json``. Two events from different nodes closer
together than the sum of their nodes' uncertainties cannot be ordered by their times alone; this
section says how many neighbouring events of the run are that close, and between which nodes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos.histories.files import read_input
from chaos.report.html import e, table
from chaos.report.loading import EventRow


def read_clocks(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_input(run_dir / "live" / "clocks.json", 16 << 20))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("nodes"), dict) else None


def uncertainty(clocks: dict[str, Any]) -> dict[str, float]:
    """Each node's uncertainty (s): the larger of its start and end estimates'."""
    out: dict[str, float] = {}
    for node, rec in clocks["nodes"].items():
        vals = [float(rec[k]["uncertainty"]) for k in ("start", "end") if k in rec]
        if vals:
            out[node] = max(vals)
    return out


def ambiguous_pairs(
    events: Sequence[EventRow], unc: dict[str, float]
) -> list[tuple[EventRow, EventRow]]:
    """Neighbouring events (by time) on different nodes whose order the clocks cannot settle."""
    ordered = sorted(events, key=lambda ev: ev.time)
    out = []
    for a, b in itertools.pairwise(ordered):
        if a.node != b.node and b.time - a.time < unc.get(a.node, 0.0) + unc.get(b.node, 0.0):
            out.append((a, b))
    return out


def clocks_section(clocks: dict[str, Any], events: Sequence[EventRow]) -> str:
    rows = []
    for node, rec in sorted(clocks["nodes"].items()):
        start, end = rec.get("start", {}), rec.get("end", {})
        rows.append(
            [
                node,
                f"{start.get('offset', 0.0) * 1e3:+.3f}",
                f"±{start.get('uncertainty', 0.0) * 1e3:.3f}",
                f"{end['offset'] * 1e3:+.3f} ±{end['uncertainty'] * 1e3:.3f}" if end else "-",
            ]
        )
    out = table(["node", "offset at start (ms)", "uncertainty (ms)", "at end (ms)"], rows)
    unc = uncertainty(clocks)
    pairs = ambiguous_pairs(events, unc)
    bound = 2 * max(unc.values(), default=0.0)
    out += (
        f"<p>{e(clocks.get('method', ''))}. Events are placed on the orchestrator's clock with "
        "the start offsets. Events on different nodes closer together than the sum of their "
        f"nodes' uncertainties (here at most {bound * 1e3:.3f} ms) cannot be ordered by time alone: "
    )
    if not pairs:
        out += "no neighbouring events of this run are that close.</p>"
    else:
        out += f"{len(pairs)} neighbouring pair(s) of this run are.</p>"
        out += table(
            ["time (s)", "first", "then (s)", "second"],
            [
                [f"{a.time:.6f}", f"{a.node} {a.component} {a.kind}", f"{b.time:.6f}",
                 f"{b.node} {b.component} {b.kind}"]
                for a, b in pairs[:20]
            ],
        )  # fmt: skip
    return out
