"""The report draws a transactional anomaly's cycle: its transactions, one arrow per edge
labelled with the edge's kind and key, every text escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.report import render
from chaos.report.cycle import cycle_svg
from chaos.report.html import e
from tests.unit.elle_history import check, concurrent, found, serial, then


def _write_skew(key_x: str = "x") -> dict[str, Any]:
    t1 = ("ok", 0, [("r", "y", []), ("append", key_x, 1)])
    t2 = ("ok", 1, [("r", key_x, []), ("append", "y", 2)])
    later = ("ok", 2, [("r", key_x, [1]), ("r", "y", [2])])
    r = check(then(concurrent(t1, t2), serial(later)), "serializable")
    (a,) = found(r, "G2-item")
    return a


def test_the_cycle_is_drawn_with_its_transactions_and_labelled_edges() -> None:
    svg = cycle_svg(_write_skew())
    assert svg is not None and svg.startswith("<svg")
    assert svg.count("<circle") == 2 and svg.count("marker-end=") == 2
    assert ">T1<" in svg and ">T2<" in svg and ">op 2<" in svg
    assert ">rw x<" in svg and ">rw y<" in svg
    assert "missed T2&#x27;s append" in svg or "missed T2's append" in svg


def test_hostile_keys_are_escaped_and_odd_anomalies_are_not_drawn() -> None:
    svg = cycle_svg(_write_skew("<script>alert(1)</script>"))
    assert svg is not None
    assert "<script>" not in svg and e("<script>alert(1)</script>") in svg
    assert cycle_svg({"type": "lost-update", "txns": [2, 3]}) is None
    assert cycle_svg({"txns": [{"name": "T1"}], "steps": []}) is None
    assert cycle_svg({"txns": "x", "steps": None}) is None


def test_a_run_page_draws_the_cycle_of_an_elle_result(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(json.dumps({"workload": "etcd-append"}))
    a = _write_skew()
    doc = {
        "verdict": "invalid",
        "results": [
            {
                "checker": "elle-list-append",
                "verdict": "invalid",
                "summary": "not serializable: G2-item (1)",
                "anomalies": [a],
                "stats": {},
            }
        ],
    }
    (run_dir / "results.json").write_text(json.dumps(doc))
    page = render(run_dir).read_text()
    assert '<div class="cycle-wrap"><svg' in page
    assert "G2-item: T1 &lt; T2 &lt; T1" in page
