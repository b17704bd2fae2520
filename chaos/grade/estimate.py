"""How much a grade is, before it starts: runs by configuration, and about how long they take.

The estimate is the measured throughput of lab runs on the 2-core machine chaos is developed on
(docs/benchmarks.md, "Grading throughput"): one run at a time finished a run every 12.2 s (88 runs
of lab3's default matrix in 1,075 s, a subprocess a run), four at once every 5.5 s (warm: lab3's
whole matrix over its 9 shipped solutions, 72 runs in 399 s, 650 runs/hour, 2026-12-04). A machine
with more cores is faster; the estimate says what it rests on so nobody takes it for a promise.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from chaos.grade.matrix import Matrix
from chaos.grade.submissions import Submission

# seconds between two finished runs, by runs at once (measured; past 4, 4's)
MEASURED = {1: 12.2, 4: 5.5}


def seconds_per_run(parallel: int) -> float:
    """The measured seconds between two finished runs at ``parallel`` runs at once, interpolated
    between the measured points (the work is CPU-bound past two runs on two cores)."""
    if parallel <= 1:
        return MEASURED[1]
    if parallel >= 4:
        return MEASURED[4]
    frac = (parallel - 1) / 3
    return MEASURED[1] + (MEASURED[4] - MEASURED[1]) * frac


@dataclass(frozen=True, slots=True)
class Plan:
    rows: int  # submissions and controls that run
    not_run: int  # rows refused before any run (a link, an oversized folder)
    configs: int
    repeats: int
    runs: int
    seconds: float  # the estimate, on this machine at ``parallel``
    parallel: int

    def lines(self) -> list[str]:
        est = _clock(self.seconds)
        return [
            f"plan: {self.rows} row(s) x {self.configs} configuration(s) x {self.repeats} "
            f"repeat(s) = {self.runs} run(s)"
            + (f" ({self.not_run} row(s) not run)" if self.not_run else ""),
            f"about {est} at {self.parallel} run(s) at a time (measured: {MEASURED[1]:g} s a "
            f"run one at a time, {MEASURED[4]:g} s four at once, on 2 cores)",
        ]


def plan_of(
    rows: Sequence[Submission], matrix: Matrix, repeats: int, parallel: int, done: int = 0
) -> Plan:
    """The grade's size: every row that runs, under every configuration, ``repeats`` times, less
    the ``done`` runs a resumed grade has already."""
    running = [r for r in rows if not r.problem]
    runs = max(0, len(running) * len(matrix.configs) * repeats - done)
    return Plan(
        rows=len(running),
        not_run=len(rows) - len(running),
        configs=len(matrix.configs),
        repeats=repeats,
        runs=runs,
        seconds=runs * seconds_per_run(parallel),
        parallel=parallel,
    )


def table(rows: Sequence[Submission], matrix: Matrix, repeats: int) -> list[str]:
    """The matrix x rows x repeats, a line per configuration and per row, nothing run."""
    out = [f"{len(matrix.configs)} configuration(s), each run {repeats} time(s) per row:"]
    for c in matrix.configs:
        out.append(f"  {c.name} (weight {c.weight:g}): chaos run <lab> {shlex.join(c.argv())}")
    out.append(f"{len(rows)} row(s):")
    for r in rows:
        kind = "control" if r.is_control else "student"
        out.append(f"  {r.name} ({kind})" + (f": not run: {r.problem}" if r.problem else ""))
    return out


def _clock(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"
    )
