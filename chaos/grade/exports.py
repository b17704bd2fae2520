"""A grade's scores for other tools: Gradescope's ``results.json`` per student, and a plain
gradebook CSV for an LMS (a row per student).

Gradescope's autograder format: ``{"score", "output", "visibility", "tests": [{"name", "score",
"max_score", "output", "visibility", "status"}]}``, one test per configuration, its
``max_score`` the configuration's weight and its ``score`` the weight times the pass rate (the
class report's score, in points).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chaos.grade.report import safe_csv
from chaos.grade.story import NO_VERDICT, ConfigStory, Student
from chaos.histories.store import write_json

__all__ = ["GRADESCOPE", "gradebook", "gradescope", "write_gradescope"]

GRADESCOPE = "results.json"


def _points(x: float) -> float:
    return round(x, 4)


def _output(s: ConfigStory) -> str:
    if s.runs == 0:
        if s.results:
            return "not graded: " + NO_VERDICT["env-error"]
        return "not run"
    lines = [f"{s.passes} of {s.runs} run(s) passed."]
    if s.failed and s.shown is not None:
        if s.lead is not None:
            lines.append(f"run {s.shown.repeat} ({s.lead.checker}): {s.lead.sentence}")
        else:
            said = s.shown.message or s.shown.anomaly or NO_VERDICT.get(s.shown.status, "")
            lines.append(f"run {s.shown.repeat}: {s.shown.status}: {said}")
        if s.command:
            lines.append(f"reproduce: {s.command}")
    return "\n".join(lines)


def _test(s: ConfigStory) -> dict[str, Any]:
    score = s.weight * s.passes / s.runs if s.runs else 0.0
    return {
        "name": s.config,
        "score": _points(score),
        "max_score": _points(s.weight),
        "status": "failed" if s.failed or s.runs == 0 else "passed",
        "output": _output(s),
        "visibility": "visible",
    }


def gradescope(student: Student) -> dict[str, Any]:
    """Gradescope's results.json for one student."""
    got, _ = student.points
    failed = [s.config for s in student.stories if s.failed]
    summary = (
        f"failed under {', '.join(failed)}: see each test, and the feedback page"
        if failed
        else "no configuration failed"
    )
    if student.reason:
        summary = f"{student.reason}; {summary}"
    return {
        "score": _points(got),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_test(s) for s in student.stories],
    }


def write_gradescope(path: Path, student: Student, scrub: Callable[[str], str]) -> None:
    doc = gradescope(student)
    doc["output"] = scrub(doc["output"])
    for t in doc["tests"]:
        t["output"] = scrub(t["output"])
    write_json(path, doc)


GRADEBOOK_HEAD = ("student", "points", "max_points", "percent", "failed", "comment")


def gradebook(students: Sequence[Student]) -> str:
    """A row per student: points, out of, percent, the configurations failed, and why a
    submission did not run (text a spreadsheet would take for a formula is quoted)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(GRADEBOOK_HEAD)
    for s in students:
        got, most = s.points
        pct = "" if not most else f"{100 * got / most:.1f}"
        failed = " ".join(c.config for c in s.stories if c.failed)
        w.writerow(
            [safe_csv(v) for v in (s.name, f"{got:g}", f"{most:g}", pct, failed, s.reason or "")]
        )
    return buf.getvalue()
