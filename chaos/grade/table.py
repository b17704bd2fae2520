"""The class table: finished runs folded into rows (submissions) x columns (configurations),
the power of each configuration on the control rows, and the most common anomalies.

Pure functions of the ledger's records: the report is rebuilt the same way from a resumed or an
interrupted grade.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chaos.grade.matrix import Matrix
from chaos.grade.stats import Tally
from chaos.grade.submissions import Submission
from chaos.grade.task import RunResult


@dataclass(frozen=True, slots=True)
class Cell:
    tally: Tally
    # the run a reader should open first: the first failing one by repeat (else the first run)
    shown: RunResult | None = None
    # graded runs that ended without a verdict (rejected, error, timeout), by status
    broken: tuple[tuple[str, int], ...] = ()

    @property
    def env_only(self) -> bool:
        return self.tally.runs == 0 and self.tally.env_errors > 0


@dataclass(frozen=True, slots=True)
class Row:
    submission: Submission
    cells: dict[str, Cell] = field(default_factory=dict)
    score: float | None = None  # weighted pass rate over the configurations with graded runs
    flaky: tuple[str, ...] = ()  # configurations that both passed and failed
    reason: str | None = None  # why it could not run, or why its runs broke

    @property
    def name(self) -> str:
        return self.submission.name


@dataclass(frozen=True, slots=True)
class Power:
    """One configuration against the controls: how often each buggy control was caught, and how
    often the reference was failed (false alarms)."""

    config: str
    false_alarms: Tally | None
    detections: dict[str, Tally]


@dataclass(frozen=True, slots=True)
class Anomaly:
    checker: str
    runs: int
    students: int
    example: str


@dataclass(frozen=True, slots=True)
class ClassTable:
    configs: tuple[str, ...]
    rows: tuple[Row, ...]
    power: tuple[Power, ...]
    anomalies: tuple[Anomaly, ...]
    counts: dict[str, int]  # runs by status


def _cell(results: Sequence[RunResult]) -> Cell:
    graded = [r for r in results if r.graded]
    tally = Tally(
        passes=sum(r.passed for r in graded),
        runs=len(graded),
        env_errors=sum(r.status == "env-error" for r in results),
    )
    ordered = sorted(results, key=lambda r: r.repeat)
    failing = [r for r in ordered if r.graded and not r.passed]
    shown = failing[0] if failing else (ordered[0] if ordered else None)
    broken = Counter(r.status for r in graded if r.status in ("rejected", "error", "timeout"))
    return Cell(tally=tally, shown=shown, broken=tuple(sorted(broken.items())))


def _reason(sub: Submission, results: Sequence[RunResult]) -> str | None:
    if sub.problem:
        return sub.problem
    messages = Counter(r.message for r in results if r.graded and r.status != "valid" and r.message)
    graded = sum(r.graded for r in results)
    if not messages:
        return None
    message, n = messages.most_common(1)[0]
    return f"{n} of {graded} runs: {message}"


def build(
    submissions: Sequence[Submission], matrix: Matrix, results: Iterable[RunResult]
) -> ClassTable:
    by_cell: dict[tuple[str, str], list[RunResult]] = {}
    all_results = list(results)
    for r in all_results:
        by_cell.setdefault((r.student, r.config), []).append(r)
    names = matrix.names()
    rows = []
    for sub in submissions:
        cells = {c: _cell(by_cell.get((sub.name, c), [])) for c in names}
        weighted = [
            (matrix.get(c).weight, cell.tally.pass_rate)
            for c, cell in cells.items()
            if cell.tally.pass_rate is not None
        ]
        total = sum(w for w, _ in weighted)
        score = sum(w * (p or 0.0) for w, p in weighted) / total if total else None
        mine = [r for (s, _), rs in by_cell.items() if s == sub.name for r in rs]
        rows.append(
            Row(
                submission=sub,
                cells=cells,
                score=None if sub.problem else score,
                flaky=tuple(c for c, cell in cells.items() if cell.tally.flaky),
                reason=_reason(sub, mine),
            )
        )
    return ClassTable(
        configs=tuple(names),
        rows=tuple(rows),
        power=tuple(_power(rows, names)),
        anomalies=tuple(_anomalies(submissions, all_results)),
        counts=dict(Counter(r.status for r in all_results)),
    )


def _power(rows: Sequence[Row], configs: Sequence[str]) -> list[Power]:
    out = []
    for c in configs:
        ref = [r.cells[c].tally for r in rows if r.submission.kind == "reference"]
        out.append(
            Power(
                config=c,
                false_alarms=ref[0] if ref else None,
                detections={r.name: r.cells[c].tally for r in rows if r.submission.kind == "buggy"},
            )
        )
    return out


def _anomalies(
    submissions: Sequence[Submission], results: Sequence[RunResult], top: int = 10
) -> list[Anomaly]:
    """Checkers that failed students' runs, most common first (controls are left out: their bugs
    are planted)."""
    students = {s.name for s in submissions if not s.is_control}
    runs: Counter[str] = Counter()
    who: dict[str, set[str]] = {}
    example: dict[str, str] = {}
    for r in results:
        if r.student not in students or r.status not in ("invalid", "unknown"):
            continue
        for i, checker in enumerate(r.checkers):
            runs[checker] += 1
            who.setdefault(checker, set()).add(r.student)
            sentence = r.summaries[i] if i < len(r.summaries) else r.anomaly if i == 0 else None
            if sentence and checker not in example:
                example[checker] = sentence
    return [
        Anomaly(checker=c, runs=n, students=len(who[c]), example=example.get(c, ""))
        # ties stay in the order first seen: a run lists its strongest finding first
        for c, n in sorted(runs.items(), key=lambda kv: (-len(who[kv[0]]), -kv[1]))[:top]
    ]
