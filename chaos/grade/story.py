"""What a student reads about one configuration: the verdict of each run, the one anomaly that
explains the most (the report's own ranking, chaos.report.findings), its steps, and the command
that reproduces it on the student's machine.

Everything here is read from the grade's folder (grades.json, runs.jsonl, each run's
results.json) through the guarded loaders; nothing is re-judged.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.grade.scrub import SOLUTION
from chaos.grade.task import RunResult
from chaos.histories.limits import InputError
from chaos.histories.store import read_json
from chaos.report.findings import classify, group_by_cause

__all__ = ["ConfigStory", "Lead", "Student", "lead_of", "student_command"]

# what a run without a verdict tells a student, by status
NO_VERDICT = {
    "rejected": "the run was refused before it started (chaos run's preflight)",
    "error": "the run broke: your services did not start or crashed",
    "timeout": "the run never ended and was stopped",
    "env-error": "the grading machine failed (not your code): not graded",
}


@dataclass(frozen=True, slots=True)
class Lead:
    """The anomaly that explains the most in one run."""

    checker: str
    sentence: str
    steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConfigStory:
    config: str
    weight: float
    passes: int
    runs: int
    results: tuple[RunResult, ...]  # every run of the student under this configuration
    shown: RunResult | None  # the first failing run (else the first run)
    lead: Lead | None  # the anomaly of ``shown``, when it failed with one
    command: str | None  # what reproduces ``shown`` on the student's machine

    @property
    def failed(self) -> bool:
        return self.runs > 0 and self.passes < self.runs


def student_command(command: str, schedule: str | None = None) -> str | None:
    """The graded run's command, naming the student's folder as :data:`SOLUTION` (and a
    configuration's schedule file as the copy in the pack), else None (unparseable)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    for flag, value in (("--solution", SOLUTION), ("--schedule", schedule)):
        if flag in argv[:-1] and value is not None:
            argv[argv.index(flag) + 1] = value
    if "--solution" not in argv:
        argv += ["--solution", SOLUTION]
    return shlex.join(argv)


def _step(s: Any) -> str:
    """One step of a story as a sentence: a string as it is; an event of a chain as the CLI
    prints it (time, node, component, step); anything else as its scalar fields."""
    if isinstance(s, str):
        return s
    if isinstance(s, Mapping):
        if "step" in s:
            t = s.get("time")
            at = f"{t:.3f} s " if isinstance(t, int | float) and not isinstance(t, bool) else ""
            who = " ".join(str(s[k]) for k in ("node", "component") if s.get(k))
            return f"{at}{who} {s['step']}".strip()
        return ", ".join(
            f"{k} {v}" for k, v in s.items() if isinstance(v, str | int | float | bool)
        )
    return str(s)


def lead_of(results: Mapping[str, Any]) -> Lead | None:
    """The first group's lead anomaly of a run's results.json (its notes when it has none: an
    unknown verdict), with its steps or its task's chain of events."""
    items = results.get("results")
    if not isinstance(items, list):
        return None
    found = classify(r for r in items if isinstance(r, dict))
    for kind in ("anomaly", "note"):
        chosen = [f for f in found if f.kind == kind]
        if chosen:
            f = group_by_cause(chosen, [])[0].lead
            raw = f.record.get("steps") or f.record.get("chain") or []
            steps = tuple(_step(s) for s in raw) if isinstance(raw, list) else ()
            return Lead(checker=f.checker, sentence=f.summary or f.title(), steps=steps)
    # a checker that failed without listing anomalies still says why
    for r in items:
        if isinstance(r, dict) and r.get("verdict") in ("invalid", "unknown"):
            return Lead(checker=str(r.get("checker", "?")), sentence=str(r.get("summary", "")))
    return None


def read_lead(grade_dir: Path, run: RunResult) -> Lead | None:
    if run.passed or not run.run_dir:
        return None
    try:
        results = read_json(grade_dir / run.run_dir / "results.json", None)
    except (InputError, OSError, ValueError):
        return None
    return lead_of(results) if isinstance(results, dict) else None


def config_story(
    grade_dir: Path,
    config: Mapping[str, Any],
    results: Sequence[RunResult],
    schedule: str | None,
) -> ConfigStory:
    ordered = sorted(results, key=lambda r: r.repeat)
    graded = [r for r in ordered if r.graded]
    failing = [r for r in graded if not r.passed]
    shown = failing[0] if failing else (ordered[0] if ordered else None)
    return ConfigStory(
        config=str(config["name"]),
        weight=float(config.get("weight", 1.0)),
        passes=sum(r.passed for r in graded),
        runs=len(graded),
        results=tuple(ordered),
        shown=shown,
        lead=read_lead(grade_dir, shown) if shown is not None else None,
        command=student_command(shown.command, schedule) if shown and shown.command else None,
    )


@dataclass(frozen=True, slots=True)
class Student:
    name: str
    workload: str
    score: float | None
    reason: str | None
    stories: tuple[ConfigStory, ...]
    # the configurations' schedule files copied into the pack: their file in the pack -> source
    schedules: Mapping[str, str]

    @property
    def points(self) -> tuple[float, float]:
        """(score, max score), as the class report's score: each configuration with graded runs
        counts its weight times its pass rate, out of its weight; one without (its runs all
        failed for the grading machine) counts for nothing. No graded run at all (no
        protocol.py): 0 out of every weight."""
        graded = [s for s in self.stories if s.runs]
        if not graded:
            return 0.0, sum(s.weight for s in self.stories)
        return sum(s.weight * s.passes / s.runs for s in graded), sum(s.weight for s in graded)
