"""Findings in three kinds, anomalies grouped by root cause, and values a person can read.

The page must not show a red card under a green VALID (lab1's expected overlaps and the
unsafe-lease story that fencing ended well), must tell fifteen anomalies of one pause as one cause
led by the checker's story, and must print records as words, not JSON.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from chaos.report.faults import FaultBand
from chaos.report.findings import classify, group_by_cause
from chaos.report.html import fmt_value, kv_table
from chaos.report.loading import load
from chaos.report.page import build_page
from chaos.workloads.lab1.report import UnsafeLeaseSection
from tests.fixtures import synthetic_runs as runs


def _r(checker: str, verdict: str, *anomalies: dict[str, Any]) -> dict[str, Any]:
    return {"checker": checker, "verdict": verdict, "summary": "s", "anomalies": list(anomalies)}


def _band(fid: str, start: float, end: float) -> FaultBand:
    return FaultBand(fault_id=fid, fault="pause", start=start, end=end, open=False, nodes=("n1",))


def test_kind_follows_the_checkers_verdict_its_own_field_and_the_rule_table() -> None:
    found = classify(
        [
            _r("overlapping-holders", "valid", {"summary": "expected overlap"}),
            _r("no-double-apply", "invalid", {"summary": "applied twice"}),
            _r("linearizable", "unknown", {"summary": "search gave up"}),
            _r("counter", "invalid", {"summary": "defended", "finding": "observation"}),
            _r("scenario-fired", "unknown", {"summary": "did not fire"}),
        ]
    )
    assert [(f.checker, f.kind) for f in found] == [
        ("overlapping-holders", "observation"),
        ("no-double-apply", "anomaly"),
        ("linearizable", "note"),
        ("counter", "observation"),
        ("scenario-fired", "observation"),
    ]


def test_one_pause_is_one_root_cause_led_by_the_story() -> None:
    story = {"steps": ["1.0 s — n1 acquired"], "stop": {"fault_id": "f1"}, "summary": "story"}
    twice = {"applications": [{"node": "n2", "time": 4.9}, {"node": "n1", "time": 8.05}]}
    balance = {"kind": "balance", "order": "o1", "balance": 19, "expected": 17}
    found = classify(
        [
            _r("no-double-apply", "invalid", twice),
            _r("every-night", "invalid", balance),
            _r("unsafe-lease", "invalid", story),
        ]
    )
    (g,) = group_by_cause(found, [_band("f1", 2.0, 8.0)])
    assert g.lead.checker == "unsafe-lease"
    assert [f.checker for f in g.rest] == ["no-double-apply", "every-night"]
    assert g.cause == "pause of n1 (fault f1, 2.00 s to 8.00 s)"


def test_two_faults_make_two_causes_and_a_time_before_any_fault_its_own() -> None:
    found = classify(
        [
            _r("double-apply", "invalid", {"task_id": "t1", "commits": [{"time": 3.0}]}),
            _r("double-apply", "invalid", {"task_id": "t2", "commits": [{"time": 12.0}]}),
            _r("counter", "invalid", {"time": 0.5}),
            _r("counter", "invalid", {"balance": 3}),
        ]
    )
    groups = group_by_cause(found, [_band("a", 2.0, 4.0), _band("b", 10.0, 11.0)])
    causes = {g.cause: [g.lead.record.get("task_id"), len(g.rest)] for g in groups}
    assert causes == {
        "pause of n1 (fault a, 2.00 s to 4.00 s)": ["t1", 0],
        "pause of n1 (fault b, 10.00 s to 11.00 s)": ["t2", 0],
        # neither can be placed on one of two faults: they stay apart, after the tasks
        "no fault came before these": [None, 1],
    }
    assert groups[-1].cause == "no fault came before these"


def _page(run: Path) -> str:
    return build_page(load(run), [UnsafeLeaseSection()])


def test_valid_lab1_shows_observations_and_no_anomaly_card(tmp_path: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(tmp_path, fenced=True))
    assert 'class="verdict valid"' in page
    assert 'class="finding anomaly"' not in page and "Root cause" not in page
    assert re.search(r"Observations \(\d+\)", page)
    assert 'class="finding observation"' in page


def test_invalid_lab1_leads_with_the_unsafe_lease_story(tmp_path: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(tmp_path, fenced=False))
    assert 'class="verdict invalid"' in page
    findings = page[page.index('<section id="anomalies">') :]
    findings = findings[: findings.index("</section>")]
    assert findings.count('<h3 class="cause-title">') == 1
    first = re.search(r'<div class="finding anomaly"[^>]*><h3>([^:]+):', findings)
    assert first is not None and first.group(1) == "unsafe-lease"
    assert "more with the same cause" in findings


def test_values_read_as_words_not_json() -> None:
    holder = {"node": "n1", "token": 1, "expires": 13.25}
    assert fmt_value(holder) == "node n1, token 1, expires 13.25"
    assert fmt_value(["10.04 s — n1 acquired", "13.02 s — expired"]) == (
        "10.04 s — n1 acquired, 13.02 s — expired"
    )
    assert fmt_value([{"a": 1}, {"a": 2}]) == "a 1; a 2"
    assert fmt_value(None) == "none" and fmt_value(0.125) == "0.125"
    cell = kv_table({"holder": holder, "steps": ["a — b", "c"], "paused": ["n1"]})
    assert "{&quot;" not in cell and "\\u2014" not in cell and "[" not in cell
    assert "<ol><li>a — b</li><li>c</li></ol>" in cell


def test_a_page_shows_no_json_and_folds_plots_of_a_handful_of_ops(tmp_path: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(tmp_path, fenced=False))
    # {&quot; is JSON escaped into HTML text; the timeline's own data sits in a script element
    assert "{&quot;" not in page and "\\u2014" not in page and "e+09" not in page
    assert '<a href="spec.json">spec.json</a>' in page
    assert "Only 12 ops completed" in page and "<details><summary>plots</summary>" in page


def test_a_fault_with_no_recorded_target_reads_without_a_question_mark() -> None:
    point = FaultBand(fault_id="3", fault="txn-error-complete", start=1.0, end=2.0, open=False)
    assert point.target == "" and point.label == "txn-error-complete"
    (g,) = group_by_cause(classify([_r("counter", "invalid", {"time": 1.5})]), [point])
    assert g.cause == "txn-error-complete (fault 3, 1.00 s to 2.00 s)"


def test_a_finding_another_points_to_leads_and_a_bare_record_takes_its_checkers_sentence() -> None:
    double = {"task_id": "t2", "kind": "counter-excess", "commits": [{"time": 12.1}]}
    create = {"task_id": "t2", "outbox": [{"rev": 3}, {"rev": 20}]}
    found = classify(
        [
            {
                "checker": "double-apply",
                "verdict": "invalid",
                "summary": "t2 twice: its create was not idempotent (see idempotent-create)",
                "anomalies": [double, {"task_id": "t9", "commits": []}],
            },
            {
                "checker": "idempotent-create",
                "verdict": "invalid",
                "summary": "task t2: the create wrote 2 outbox entries",
                "anomalies": [create],
            },
        ]
    )
    (g,) = group_by_cause(found, [_band("1", 11.4, 11.5)])
    assert g.lead.checker == "idempotent-create"
    assert g.lead.title() == "task t2: the create wrote 2 outbox entries"
    # two findings of double-apply: its summary is about one of them, so neither takes it
    assert [f.title() for f in g.rest] == ["task t2: counter-excess", "task t9"]
