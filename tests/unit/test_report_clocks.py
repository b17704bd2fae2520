"""The report's node clocks section: which neighbouring events the clocks cannot order."""

from __future__ import annotations

from chaos.report.clocks import ambiguous_pairs, clocks_section, uncertainty
from chaos.report.loading import EventRow

CLOCKS = {
    "method": "round trips",
    "nodes": {
        "n1": {"start": {"offset": 0.5, "uncertainty": 0.001}},
        "n2": {
            "start": {"offset": -0.2, "uncertainty": 0.002},
            "end": {"offset": -0.2, "uncertainty": 0.004},
        },
    },
}


def ev(t: float, node: str, kind: str = "commit") -> EventRow:
    return EventRow(t, node, "worker", kind, None, None, None, {})


def test_only_close_events_on_different_nodes_are_ambiguous() -> None:
    unc = uncertainty(CLOCKS)
    assert unc == {"n1": 0.001, "n2": 0.004}
    events = [ev(1.0, "n1"), ev(1.004, "n2"), ev(1.0045, "n2"), ev(2.0, "n1"), ev(2.01, "n2")]
    pairs = ambiguous_pairs(events, unc)
    # 1.000 n1 / 1.004 n2: 4 ms apart < 1 + 4 ms; same-node neighbours never; 10 ms apart: ordered
    assert [(a.time, b.time) for a, b in pairs] == [(1.0, 1.004)]
    html = clocks_section(CLOCKS, events)
    assert "1 neighbouring pair(s)" in html and "+500.000" in html and "at most 8.000 ms" in html
    assert "no neighbouring events" in clocks_section(CLOCKS, events[3:])
