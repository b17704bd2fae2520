"""Folding runs into the class table (rates, flaky, power, anomalies, environment errors), and
the three reports written from it."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from chaos.grade import report, table
from chaos.grade.matrix import Config, Matrix
from chaos.grade.submissions import Submission
from chaos.grade.task import RunResult

MATRIX = Matrix(configs=(Config(name="pause", weight=3.0), Config(name="quiet", weight=1.0)))
ROWS = [
    Submission(name="control:reference", solution="reference", kind="reference"),
    Submission(name="control:no-dedup", solution="no-dedup", kind="buggy"),
    Submission(name="alice", solution="/s/alice"),
    Submission(name="bob", solution="/s/bob"),
    Submission(name="=carol", solution="/s/=carol"),
    Submission(name="dave", solution="/s/dave", problem="no protocol.py"),
]
DOUBLE = "task t1: counter incremented twice by its amount (2)"
COUNTER = "the counter is 12 but the 3 accepted tasks add up to 10"


def _r(student: str, config: str, k: int, status: str, **kw: object) -> RunResult:
    return RunResult(
        student=student,
        config=config,
        repeat=k,
        seed=k,
        status=status,
        command=f"chaos run memory-lab3 --seed {k} --solution {student}",
        **{"run_dir": f"runs/{student}/{config}/r{k}", **kw},  # type: ignore[arg-type]
    )


def _bad(student: str, config: str, k: int) -> RunResult:
    return _r(
        student,
        config,
        k,
        "invalid",
        checkers=("double-apply", "counter"),
        anomaly=DOUBLE,
        summaries=(DOUBLE, COUNTER),
    )


RESULTS = [
    *(_r("control:reference", c, k, "valid") for c in ("pause", "quiet") for k in (1, 2, 3)),
    *(_bad("control:no-dedup", "pause", k) for k in (1, 2, 3)),
    _bad("control:no-dedup", "quiet", 1),
    _r("control:no-dedup", "quiet", 2, "valid"),
    _r("control:no-dedup", "quiet", 3, "valid"),
    *(_r("alice", c, k, "valid") for c in ("pause", "quiet") for k in (1, 2, 3)),
    # bob: caught by pause twice out of three (flaky), a time-out, and environment trouble
    _r("bob", "pause", 1, "valid"),
    _bad("bob", "pause", 2),
    _bad("bob", "pause", 3),
    _r("bob", "quiet", 1, "timeout", message="no verdict after 300 s: stopped"),
    _r("bob", "quiet", 2, "valid"),
    _r("bob", "quiet", 3, "env-error", message="no Docker engine answers", run_dir=None),
    # carol: every pause run an environment error; quiet crashed on import
    *(_r("=carol", "pause", k, "env-error", message="image build failed") for k in (1, 2, 3)),
    *(
        _r("=carol", "quiet", k, "error", message="RuntimeError: lab3 api on n1 did not start")
        for k in (1, 2, 3)
    ),
]


def _table() -> table.ClassTable:
    return table.build(ROWS, MATRIX, RESULTS)


def test_cells_rates_scores_and_flaky() -> None:
    t = _table()
    rows = {r.name: r for r in t.rows}
    assert [r.name for r in t.rows] == [s.name for s in ROWS]

    alice = rows["alice"]
    assert alice.score == 1.0 and not alice.flaky and alice.reason is None
    assert (alice.cells["pause"].tally.passes, alice.cells["pause"].tally.runs) == (3, 3)

    bob = rows["bob"]
    pause, quiet = bob.cells["pause"], bob.cells["quiet"]
    assert (pause.tally.passes, pause.tally.runs) == (1, 3)
    assert bob.flaky == ("pause", "quiet")  # quiet: one valid, one timed out
    # the first failing run by repeat is the one linked
    assert pause.shown is not None and pause.shown.repeat == 2
    # the environment error is neither a pass nor a fail
    assert (quiet.tally.passes, quiet.tally.runs, quiet.tally.env_errors) == (1, 2, 1)
    assert dict(quiet.broken) == {"timeout": 1}
    # weighted: (3 * 1/3 + 1 * 1/2) / 4
    assert bob.score == (3 * (1 / 3) + 1 * 0.5) / 4

    carol = rows["=carol"]
    assert carol.cells["pause"].env_only and carol.cells["pause"].tally.runs == 0
    # only the graded configuration counts towards the score
    assert carol.score == 0.0
    assert carol.reason == "3 of 3 runs: RuntimeError: lab3 api on n1 did not start"

    dave = rows["dave"]
    assert dave.reason == "no protocol.py" and dave.score is None
    assert all(c.tally.runs == 0 for c in dave.cells.values())
    assert t.counts["env-error"] == 4 and t.counts["valid"] == 16


def test_power_table_uses_the_controls() -> None:
    power = {p.config: p for p in _table().power}
    assert power["pause"].false_alarms is not None
    assert power["pause"].false_alarms.fails == 0
    caught = power["pause"].detections["control:no-dedup"]
    assert (caught.fails, caught.runs) == (3, 3)
    weak = power["quiet"].detections["control:no-dedup"]
    assert (weak.fails, weak.runs) == (1, 3)
    assert list(power["pause"].detections) == ["control:no-dedup"]  # students are not controls


def test_common_anomalies_count_students_not_controls() -> None:
    (first, second) = _table().anomalies
    assert (first.checker, first.students, first.runs) == ("double-apply", 1, 2)
    assert first.example == DOUBLE
    assert (second.checker, second.example) == ("counter", COUNTER)


def test_reports(tmp_path: Path) -> None:
    t = _table()
    meta = {
        "lab": "memory-lab3",
        "seed": 42,
        "repeats": 3,
        "configs": [c.to_json() for c in MATRIX.configs],
    }
    (tmp_path / "runs/bob/pause/r2").mkdir(parents=True)
    (tmp_path / "runs/bob/pause/r2/report.html").write_text("<html></html>")
    paths = report.write_all(tmp_path, t, meta)

    page = paths["html"].read_text()
    assert "<script src" not in page and "<link" not in page  # self-contained
    assert 'class="sortable"' in page
    # bob's pause cell: 1/3, amber, a link to the first failing run's page, its re-run command
    # and its anomaly in the tooltip
    cell = re.search(r'<td class="c mixed"[^>]*>.*?</td>', page, re.S)
    assert cell is not None
    assert 'href="runs/bob/pause/r2/report.html"' in cell.group(0)
    assert ">1/3<" in cell.group(0)
    # the command names the submission as the grade was given it, not the worker's copy
    assert "chaos run memory-lab3 --seed 2 --solution /s/bob" in cell.group(0)
    assert "counter incremented twice" in cell.group(0)
    # no page rendered for that run: the folder is linked instead
    assert 'href="runs/control:no-dedup/quiet/r1/"' in page
    assert "environment error" in page and "no protocol.py" in page
    assert "&lt;" not in DOUBLE and "=carol" in page
    assert "reference: false alarms" in page and "control:no-dedup: caught" in page
    power = page[page.index('id="power"') :]
    # no false alarm is good news (green); a bug caught 1 time in 3 is not enough (red)
    caught = '<td class="c pass" data-v="1">caught 1 of 1 controls</td>'
    assert f'<td>pause</td>{caught}<td class="c pass" data-v="0.0000">0/3 (0%)' in power
    assert f'<td>quiet</td>{caught}<td class="c pass" data-v="0.0000">0/3 (0%)' in power
    # 3 runs a cell: too few for an interval a reader could use; the count alone is shown
    assert 'class="iv"' not in page and "0 submission(s) flaky" not in page
    assert "1 submission(s) flaky" in page
    assert '<td class="c fail" data-v="0.3333">1/3 (33%)' in power

    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    by = {r["name"]: r for r in rows}
    assert by["bob"]["pause passes"] == "1" and by["bob"]["pause runs"] == "3"
    assert by["bob"]["flaky"] == "pause quiet"
    # as on the page: 3 runs are too few for an interval, so the CSV has none either
    assert by["alice"]["score"] == "1.000" and by["alice"]["pause runs"] == "3"
    assert by["alice"]["pause low"] == by["alice"]["pause high"] == ""
    assert by["dave"]["reason"] == "no protocol.py" and by["dave"]["score"] == ""
    assert "'=carol" in by  # a spreadsheet formula stays text

    doc = json.loads(paths["json"].read_text())
    assert doc["grade"]["seed"] == 42 and doc["configs"] == ["pause", "quiet"]
    bob = next(r for r in doc["rows"] if r["name"] == "bob")
    assert bob["cells"]["pause"]["passes"] == 1
    assert bob["cells"]["pause"]["pass_interval"] == [0.0615, 0.7923]
    assert bob["cells"]["pause"]["run"] == "runs/bob/pause/r2"
    assert doc["power"][0]["detections"]["control:no-dedup"]["detection_rate"] == 1.0
    assert doc["anomalies"][0]["checker"] == "double-apply"


def test_one_repeat_claims_no_interval_no_flakiness_and_says_what_controls_lack() -> None:
    rows = [ROWS[0], ROWS[2], ROWS[3]]  # the reference only, alice, bob
    unfired = _r(
        "bob",
        "quiet",
        1,
        "unknown",
        checkers=("scenario-fired",),
        anomaly="the scenario never fired",
        summaries=("the scenario never fired",),
    )
    results = [
        *(_r(s, "pause", 1, "valid") for s in ("control:reference", "alice")),
        _r("control:reference", "quiet", 1, "valid"),
        _r("alice", "quiet", 1, "valid"),
        _bad("bob", "pause", 1),
        unfired,
    ]
    meta = {"lab": "memory-lab3", "seed": 1, "repeats": 1, "configs": []}
    built = table.build(rows, MATRIX, results)
    page = report.to_html(built, meta)
    assert 'class="iv"' not in page and "0.21" not in page
    # the CSV agrees with the page: one run is no interval (it was 0.207-1.000)
    alice = next(
        r for r in csv.DictReader(io.StringIO(report.to_csv(built))) if r["name"] == "alice"
    )
    assert alice["pause runs"] == "1" and alice["pause low"] == alice["pause high"] == ""
    assert "Flakiness is not measured" in page and "submission(s) flaky" not in page
    assert "Only the reference was graded" in page and "caught" not in page
    anomalies = page[page.index('id="anomalies"') :]
    # a scenario that never fired is about the run's setup, not a student's anomaly
    assert "double-apply" in anomalies and "scenario-fired" not in anomalies


def test_five_runs_a_cell_show_the_interval() -> None:
    results = [_r("alice", c, k, "valid") for c in ("pause", "quiet") for k in range(1, 6)]
    meta = {"lab": "memory-lab3", "seed": 1, "repeats": 5, "configs": []}
    built = table.build([ROWS[2]], MATRIX, results)
    page = report.to_html(built, meta)
    assert '<span class="iv">0.57&ndash;1.00</span>' in page
    alice = next(csv.DictReader(io.StringIO(report.to_csv(built))))
    assert (alice["pause low"], alice["pause high"]) == ("0.566", "1.000")
    assert "0 submission(s) flaky" in page
