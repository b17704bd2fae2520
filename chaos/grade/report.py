"""The class report: one self-contained HTML page, a CSV for a grade book, JSON for scripts.

The page has no external asset (styles and the sort script are inline) so that it can be mailed
or opened from a copied folder; its links are relative to the out folder, into ``runs/``.
"""

from __future__ import annotations

import csv
import html
import io
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chaos.grade.stats import Interval, Tally
from chaos.grade.table import Cell, ClassTable, Row
from chaos.histories.files import write_atomic
from chaos.histories.store import write_json
from chaos.report.findings import RULES

# Below this many graded runs a cell's 95% interval spans most of 0..1 (1 run: 0.21-1.00) and
# tells a reader nothing the count does not: the page shows the count alone.
MIN_RUNS_FOR_INTERVAL = 5
# Checkers whose failures the report layer counts as observations (chaos.report.findings): a
# scenario that did not fire says something about the run's setup, not about a student's code.
OBSERVERS = frozenset(checker for (checker, _), kind in RULES.items() if kind == "observation")

HTML_NAME = "report.html"
CSV_NAME = "grades.csv"
JSON_NAME = "grades.json"


def _iv(i: Interval) -> list[float]:
    return [round(i.low, 4), round(i.high, 4)]


def _tally_json(t: Tally) -> dict[str, Any]:
    return {
        "passes": t.passes,
        "runs": t.runs,
        "env_errors": t.env_errors,
        "pass_rate": t.pass_rate,
        "pass_interval": _iv(t.pass_interval()),
        "detection_rate": t.detection_rate,
        "detection_interval": _iv(t.detection_interval()),
        "flaky": t.flaky,
    }


def reproduce(command: str, solution: str) -> str:
    """The run's command with ``--solution`` naming the submission as the grade was given it:
    what a run stored is the worker's unpacked copy, a temp folder gone once the grade ends."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if "--solution" in argv[:-1]:
        argv[argv.index("--solution") + 1] = solution
    return shlex.join(argv)


def _cell_json(cell: Cell, solution: str) -> dict[str, Any]:
    shown = cell.shown
    return {
        **_tally_json(cell.tally),
        "broken": dict(cell.broken),
        "run": shown.run_dir if shown else None,
        "command": reproduce(shown.command, solution) if shown else None,
        "anomaly": shown.anomaly if shown and not shown.passed else None,
    }


def to_json(table: ClassTable, meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "grade": dict(meta),
        "configs": list(table.configs),
        "counts": table.counts,
        "rows": [
            {
                "name": r.name,
                "kind": r.submission.kind,
                "solution": r.submission.solution,
                "score": r.score,
                "flaky": list(r.flaky),
                "reason": r.reason,
                "cells": {
                    c: _cell_json(cell, r.submission.solution) for c, cell in r.cells.items()
                },
            }
            for r in table.rows
        ],
        "power": [
            {
                "config": p.config,
                "false_alarms": _tally_json(p.false_alarms) if p.false_alarms else None,
                "detections": {k: _tally_json(t) for k, t in p.detections.items()},
            }
            for p in table.power
        ],
        "anomalies": [
            {"checker": a.checker, "runs": a.runs, "students": a.students, "example": a.example}
            for a in table.anomalies
        ],
    }


def safe_csv(v: Any) -> Any:
    # a folder named "=HYPERLINK(...)" must stay text in a spreadsheet
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def to_csv(table: ClassTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["name", "kind", "score", "flaky", "reason"]
    for c in table.configs:
        head += [f"{c} passes", f"{c} runs", f"{c} pass rate", f"{c} low", f"{c} high"]
    w.writerow([safe_csv(h) for h in head])
    for r in table.rows:
        line: list[Any] = [
            r.name,
            r.submission.kind,
            "" if r.score is None else f"{r.score:.3f}",
            " ".join(r.flaky),
            r.reason or "",
        ]
        for c in table.configs:
            t = r.cells[c].tally
            i = t.pass_interval()
            rate = "" if t.pass_rate is None else f"{t.pass_rate:.3f}"
            # as on the page: too few runs for an interval to say anything is no interval
            few = t.runs < MIN_RUNS_FOR_INTERVAL
            lo, hi = ("", "") if few else (f"{i.low:.3f}", f"{i.high:.3f}")
            line += [t.passes, t.runs, rate, lo, hi]
        w.writerow([safe_csv(v) for v in line])
    return buf.getvalue()


# ------------------------------------------------------------------ HTML

E = html.escape

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;user-select:none}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
td.c{text-align:center;white-space:nowrap}
td.c a{color:inherit;text-decoration:none;font-weight:600}
.pass{background:#c8efc8}.fail{background:#f6c1c1}.mixed{background:#fbe3a8}
.env{background:#ddd;color:#555}.none{color:#999}
.iv{display:block;font-size:.75em;color:#555;font-weight:400}
tr.control td:first-child{font-style:italic}
.reason{color:#a33;font-size:.9em}.note{color:#555;font-size:.9em}
code{background:#f5f5f5;padding:0 .2em}
"""

# Click a header to sort by it; numbers (data-v) before text, the same header toggles direction.
SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var asc=!th.classList.contains('sorted-asc');
      t.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted-asc','sorted-desc')});
      th.classList.add(asc?'sorted-asc':'sorted-desc');
      var rows=Array.prototype.slice.call(t.tBodies[0].rows);
      function key(r){var c=r.cells[i];var v=c.getAttribute('data-v');
        return v===null?c.textContent.trim().toLowerCase():parseFloat(v);}
      rows.sort(function(a,b){var x=key(a),y=key(b);
        if(typeof x!==typeof y){return typeof x==='number'?-1:1}
        return (x<y?-1:x>y?1:0)*(asc?1:-1)});
      rows.forEach(function(r){t.tBodies[0].appendChild(r)});
    });
  });
});
"""


def _pct(x: float | None) -> str:
    return "&ndash;" if x is None else f"{100 * x:.0f}%"


def _link(out: Path | None, run_dir: str | None) -> str | None:
    """The run's report page if it was rendered, else its folder."""
    if not run_dir:
        return None
    if out is not None and (out / run_dir / "report.html").is_file():
        return f"{run_dir}/report.html"
    return f"{run_dir}/"


def _interval(low: float, high: float, runs: int) -> str:
    if runs < MIN_RUNS_FOR_INTERVAL:
        return ""
    return f'<span class="iv">{low:.2f}&ndash;{high:.2f}</span>'


def _cell_html(cell: Cell, out: Path | None, solution: str) -> str:
    t = cell.tally
    if cell.env_only:
        return f'<td class="c env" data-v="-1" title="{E(f"{t.env_errors} run(s) failed for an environment reason; not graded")}">environment error</td>'
    if not t.runs:
        return '<td class="c none" data-v="-2">&ndash;</td>'
    klass = "pass" if t.passes == t.runs else "fail" if t.passes == 0 else "mixed"
    i = t.pass_interval()
    shown = cell.shown
    tip = []
    if shown is not None:
        tip.append(f"re-run this cell: {reproduce(shown.command, solution)}")
        if not shown.passed:
            tip.append(f"r{shown.repeat}: {shown.status}: {shown.anomaly or shown.message or ''}")
    if cell.broken:
        tip.append("no verdict: " + ", ".join(f"{n} {s}" for s, n in cell.broken))
    if t.env_errors:
        tip.append(f"{t.env_errors} environment error(s), not graded")
    text = f"{t.passes}/{t.runs}"
    href = _link(out, shown.run_dir if shown else None)
    inner = f'<a href="{E(href)}">{text}</a>' if href else text
    return (
        f'<td class="c {klass}" data-v="{t.pass_rate:.4f}" title="{E(chr(10).join(tip))}">'
        f"{inner}{_interval(i.low, i.high, t.runs)}</td>"
    )


def _row_html(r: Row, out: Path | None) -> str:
    kind = {"reference": "control: reference", "buggy": "control: buggy"}.get(r.submission.kind, "")
    score = "" if r.score is None else f"{100 * r.score:.0f}%"
    note = ""
    if r.reason:
        note += f'<div class="reason">{E(r.reason)}</div>'
    if r.flaky:
        note += f'<div class="note">flaky under {E(", ".join(r.flaky))}</div>'
    sv = "-1" if r.score is None else f"{r.score:.4f}"
    return (
        f'<tr class="{"control" if r.submission.is_control else "student"}">'
        f"<td>{E(r.name)}</td><td>{E(kind)}</td>"
        f'<td data-v="{sv}">{score}</td>'
        + "".join(_cell_html(r.cells[c], out, r.submission.solution) for c in r.cells)
        + f"<td>{note}</td></tr>"
    )


def _tally_html(t: Tally | None, *, false_alarms: bool) -> str:
    """A power cell: how often the runs failed the control. Green is what a useful configuration
    does: never fail the reference, fail a buggy solution at least half the time."""
    if t is None or not t.runs:
        return '<td class="c none">&ndash;</td>'
    rate, iv = t.detection_rate, t.detection_interval()
    good = t.fails == 0 if false_alarms else (rate or 0) >= 0.5
    klass = "pass" if good else "fail"
    label = f"{t.fails}/{t.runs}"
    return (
        f'<td class="c {klass}" data-v="{rate or 0:.4f}">{label} ({_pct(t.detection_rate)})'
        f"{_interval(iv.low, iv.high, t.runs)}</td>"
    )


def _caught(detections: Mapping[str, Tally], buggy: list[str]) -> str:
    """How many buggy controls this configuration failed at least once."""
    n = sum(1 for b in buggy if (t := detections.get(b)) is not None and t.fails > 0)
    klass = "pass" if n == len(buggy) else "fail" if n == 0 else "mixed"
    return f'<td class="c {klass}" data-v="{n}">caught {n} of {len(buggy)} controls</td>'


def to_html(table: ClassTable, meta: Mapping[str, Any], out: Path | None = None) -> str:
    configs = table.configs
    head = "".join(f"<th>{E(c)}</th>" for c in configs)
    students = [r for r in table.rows if not r.submission.is_control]
    controls = [r for r in table.rows if r.submission.is_control]
    power_head, power_rows, power_note = _power(table, controls)
    anomalies = (
        "".join(
            f"<tr><td>{E(a.checker)}</td><td data-v='{a.students}'>{a.students}</td>"
            f"<td data-v='{a.runs}'>{a.runs}</td><td>{E(a.example)}</td></tr>"
            for a in table.anomalies
            if a.checker not in OBSERVERS
        )
        or '<tr><td colspan="4" class="none">no anomaly in any student run</td></tr>'
    )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(table.counts.items())) or "no runs yet"
    flakiness = _flakiness(students, meta.get("repeats"))
    interval_note = (
        f"with the Wilson 95% interval of the pass rate below it once a cell has "
        f"{MIN_RUNS_FOR_INTERVAL} runs or more (fewer runs bound the rate too loosely to show)"
    )
    weights = ", ".join(
        f"{E(str(c['name']))} &times;{c['weight']:g}" for c in meta.get("configs", [])
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>chaos grade: {E(_workload(meta))}</title><style>{STYLE}</style></head><body>
<h1>Class report: {E(_workload(meta))}</h1>
<p class="note">grade seed <code>{E(str(meta.get("seed", "")))}</code>, {E(str(meta.get("repeats", "")))} repeat(s) per configuration,
{len(students)} submission(s), {len(controls)} control row(s); runs: {E(counts)}; weights: {weights}.
{flakiness}</p>
<p class="note">A cell is passes/runs (a pass is a <em>valid</em> verdict), {interval_note}. Hover for the command that re-runs the cell alone; click for the first failing run's report.
Runs that failed for an environment reason are not graded.</p>
<h2>Submissions</h2>
<table class="sortable" id="grades"><thead><tr><th>name</th><th>row</th><th>score</th>{head}<th>notes</th></tr></thead>
<tbody>{"".join(_row_html(r, out) for r in students + controls)}</tbody></table>
<h2>Power of each configuration (on the control rows)</h2>
<p class="note">How often each configuration failed each shipped solution: for a buggy one, that is how often it
catches the bug; for the reference, how often it raises a false alarm (should be 0).</p>{power_note}
<table class="sortable" id="power"><thead><tr><th>configuration</th>{power_head}</tr></thead>
<tbody>{power_rows}</tbody></table>
<h2>Most common anomalies in submissions</h2>
<table class="sortable" id="anomalies"><thead><tr><th>checker</th><th>submissions</th><th>runs</th><th>first sentence (an example)</th></tr></thead>
<tbody>{anomalies}</tbody></table>
<script>{SCRIPT}</script>
</body></html>
"""


def _power(table: ClassTable, controls: list[Row]) -> tuple[str, str, str]:
    """The power table's header cells, rows and note: per configuration, how often it caught
    each buggy control and how often it failed the reference (a false alarm)."""
    buggy = [r.name for r in controls if r.submission.kind == "buggy"]
    has_ref = any(r.submission.kind == "reference" for r in controls)
    head = (
        ("<th>buggy controls</th>" if buggy else "")
        + ("<th>reference: false alarms</th>" if has_ref else "")
        + "".join(f"<th>{E(b)}: caught</th>" for b in buggy)
    )
    rows = "".join(
        f"<tr><td>{E(p.config)}</td>"
        + (_caught(p.detections, buggy) if buggy else "")
        + (_tally_html(p.false_alarms, false_alarms=True) if has_ref else "")
        + "".join(_tally_html(p.detections.get(b), false_alarms=False) for b in buggy)
        + "</tr>"
        for p in table.power
    )
    note = (
        ""
        if buggy
        else '<p class="note"><b>Only the reference was graded</b>: this table shows false '
        "alarms only and cannot say which configuration catches which bug; grade with the "
        "lab's buggy controls (<code>--controls</code>) to measure that.</p>"
    )
    return head, rows, note


def _flakiness(students: list[Row], repeats: Any) -> str:
    if isinstance(repeats, int) and repeats < 2:
        # flaky means passed and failed under one configuration: one run per cell cannot show it
        return (
            "Flakiness is not measured: one run per cell cannot both pass and fail "
            "(grade with <code>--repeats 2</code> or more)."
        )
    flaky = sum(1 for r in students if r.flaky)
    return f"{flaky} submission(s) flaky under at least one configuration."


def write_all(out: Path, table: ClassTable, meta: Mapping[str, Any]) -> dict[str, Path]:
    """Write the three reports into ``out`` (each atomically: a reader never sees half)."""
    paths = {"html": out / HTML_NAME, "csv": out / CSV_NAME, "json": out / JSON_NAME}
    write_atomic(paths["html"], to_html(table, meta, out).encode())
    write_atomic(paths["csv"], to_csv(table).encode())
    write_json(paths["json"], to_json(table, meta))
    return paths


def _workload(meta: Mapping[str, Any]) -> str:
    """The graded workload of a grade.json (``lab`` in grades made before the rename)."""
    return str(meta.get("workload", meta.get("lab", "")))
