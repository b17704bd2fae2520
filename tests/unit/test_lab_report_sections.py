"""The labs' report sections render what lab1's checker and lab3's lab report concluded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.report.loading import RunData
from chaos.workloads.lab1.report import UnsafeLeaseSection, lease_story
from chaos.workloads.lab3.report import LabReportSection


def _run(results: dict[str, Any], lab_report: dict[str, Any] | None = None) -> RunData:
    return RunData(
        path=Path("/nowhere"),
        spec={},
        history=[],
        events=[],
        final={},
        results=results,
        lab_report=lab_report or {},
    )


def _lease(*stories: dict[str, Any]) -> dict[str, Any]:
    return {
        "results": [{"checker": "unsafe-lease", "verdict": "valid", "anomalies": list(stories)}]
    }


def test_no_story_without_a_takeover() -> None:
    alone = {"outcome": "no-takeover", "steps": ["1.00 s — n1 acquired", "2.00 s — stopped"]}
    assert lease_story(_run(_lease(alone))) == ""
    assert UnsafeLeaseSection().sections(_run(_lease(alone))) == []
    assert UnsafeLeaseSection().sections(_run({})) == []


def test_the_first_takeover_is_told_with_its_steps_escaped() -> None:
    took = {"outcome": "stale-applied", "steps": ["1.00 s — <n1> acquired", "8.05 s — APPLIED"]}
    other = {"outcome": "rejected", "steps": ["3.00 s — n2 acquired"]}
    (sec,) = UnsafeLeaseSection().sections(_run(_lease(took, other)))
    assert sec.after == "anomalies" and sec.id == "lease"
    assert "&lt;n1&gt; acquired" in sec.html and "<n1>" not in sec.html
    assert '<li class="story-bad">8.05 s — APPLIED</li>' in sec.html
    assert "1 more occurrence(s)" in sec.html and "n2 acquired" not in sec.html


def test_lab3_section_tables_the_scenarios_or_says_the_file_is_missing() -> None:
    report = {"scenarios": {"pause": {"counter": 10, "verdict": "invalid"}}, "lab": "lab3"}
    (sec,) = LabReportSection().sections(_run({}, report))
    assert sec.id == "lab-report" and sec.after == "plots"
    assert (
        '<span class="pill invalid">invalid</span>' in sec.html and "<th>counter</th>" in sec.html
    )
    (sec,) = LabReportSection().sections(_run({}))
    assert "lab-report.json is missing" in sec.html
    assert "lab-report.json" in LabReportSection().expected_files()
