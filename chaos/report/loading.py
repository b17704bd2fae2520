"""Load a stored run for reporting, whatever state it was left in.

``chaos.histories.store.load_run`` refuses a folder without a history; a report must not: a run
that died during set-up still has a spec worth showing. Every file is optional here, and what is
absent or unreadable is listed in ``missing`` / ``problems`` so the page can say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.histories.jsonl import LineProblem, read_events, read_history
from chaos.histories.ops import Event, Op

RUN_FILES = (
    "spec.json",
    "history.jsonl",
    "events.jsonl",
    "final.json",
    "results.json",
    "lab-report.json",
)


class NotARunDir(Exception):
    """The folder holds none of the files a stored run is made of."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunData:
    path: Path
    spec: dict[str, Any]
    history: list[Op]
    events: list[Event]
    final: dict[str, Any]
    results: dict[str, Any]
    lab_report: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def lab(self) -> str:
        return str(self.spec.get("lab", "") or "")

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def end_time(self) -> float:
        """The last instant anything was recorded; open intervals are drawn up to here."""
        t = 0.0
        if self.history:
            t = max(t, max(op.time for op in self.history))
        if self.events:
            t = max(t, self.events[-1].time)
        return t


def _read_object(path: Path, problems: list[str]) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        problems.append(f"{path.name}: unreadable ({e})")
        return None
    if not isinstance(obj, dict):
        problems.append(f"{path.name}: not a JSON object")
        return None
    return obj


def _short(problem: LineProblem, run_dir: Path) -> str:
    return str(problem).replace(f"{run_dir}/", "")


def load(run_dir: Path) -> RunData:
    run_dir = run_dir.resolve()
    if not run_dir.is_dir() or not any((run_dir / f).exists() for f in RUN_FILES):
        raise NotARunDir(f"{run_dir} is not a stored run (none of {', '.join(RUN_FILES)})")
    missing: list[str] = []
    problems: list[str] = []

    def obj(name: str) -> dict[str, Any]:
        got = _read_object(run_dir / name, problems)
        if got is None:
            if not (run_dir / name).exists():
                missing.append(name)
            return {}
        return got

    spec = obj("spec.json")
    history: list[Op] = []
    events: list[Event] = []
    for name in ("history.jsonl", "events.jsonl"):
        p = run_dir / name
        if not p.exists():
            missing.append(name)
            continue
        try:
            if name == "history.jsonl":
                h = read_history(p)
                history = h.records
                problems.extend(_short(x, run_dir) for x in h.problems)
            else:
                e = read_events(p)
                events = sorted(e.records, key=lambda x: x.time)
                problems.extend(_short(x, run_dir) for x in e.problems)
        except OSError as e:
            problems.append(f"{name}: unreadable ({e})")
    final = obj("final.json")
    results = obj("results.json")
    lab_report = obj("lab-report.json")
    return RunData(
        path=run_dir,
        spec=spec,
        history=history,
        events=events,
        final=final,
        results=results,
        lab_report=lab_report,
        missing=missing,
        problems=problems,
    )
