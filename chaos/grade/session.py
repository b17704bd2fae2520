"""A whole grading: the class and its controls x the matrix x repeats, run on Dask, recorded as
runs finish, reported at the end (also when interrupted: the report then shows what finished).

    grade(request, controls=...)   the job; ``--resume`` is the same call on a request read back
                                   from the out folder's manifest, and skips every recorded run
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.grade import dispatch, estimate, ledger, report, submissions, table
from chaos.grade.matrix import Matrix
from chaos.grade.seeds import run_seed
from chaos.grade.submissions import Submission
from chaos.grade.task import (
    Finished,
    RunEnvironmentError,
    RunJob,
    RunResult,
    pack_submission,
    stop_all,
    unpack,
)
from chaos.histories.safe_text import shortened

# bring-up, teardown, checking and the report of a run, over its own time bounds
RUN_MARGIN = 180.0


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeRequest:
    lab: str
    submissions: Path
    matrix: Matrix
    repeats: int
    seed: int
    out: Path
    run_timeout: float | None = None  # None: each configuration's time bound + RUN_MARGIN
    retries: int = 2  # of a run that failed for an environment reason
    chaos: tuple[str, ...] | None = None  # how workers call chaos (None: python -m chaos.cli)
    # the control rows graded (None: every shipped solution the lab names)
    controls: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.lab,
            "submissions": str(self.submissions.resolve()),
            "matrix": self.matrix.to_json(),
            "configs": [c.to_json() for c in self.matrix.configs],
            "repeats": self.repeats,
            "seed": self.seed,
            "run_timeout": self.run_timeout,
            "retries": self.retries,
            "chaos": list(self.chaos) if self.chaos else None,
            "controls": list(self.controls) if self.controls is not None else None,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any], out: Path) -> GradeRequest:
        return GradeRequest(
            lab=str(d["workload"] if "workload" in d else d["lab"]),  # "lab" before the rename
            submissions=Path(d["submissions"]),
            matrix=Matrix.from_json(d["matrix"]),
            repeats=int(d["repeats"]),
            seed=int(d["seed"]),
            out=out,
            run_timeout=d.get("run_timeout"),
            retries=int(d.get("retries", 2)),
            chaos=tuple(d["chaos"]) if d.get("chaos") else None,
            controls=tuple(d["controls"]) if d.get("controls") is not None else None,
        )


@dataclass(frozen=True, slots=True)
class GradeOutcome:
    out: Path
    table: table.ClassTable
    reports: dict[str, Path]
    interrupted: bool = False
    ran: int = 0  # runs finished in this session
    skipped: int = 0  # runs a previous session had finished
    workers: dict[str, int] = field(default_factory=dict)  # runs by worker, this session


def rows_of(request: GradeRequest, controls: Mapping[str, str]) -> list[Submission]:
    """The class and the control rows; a student folder named like a control cannot clash (the
    controls' names carry a prefix no folder name is given by discover)."""
    chosen = {
        n: k for n, k in controls.items() if request.controls is None or n in request.controls
    }
    return submissions.controls(chosen) + submissions.discover(request.submissions)


def plan(
    request: GradeRequest, rows: Sequence[Submission], done: Mapping[str, RunResult]
) -> list[RunJob]:
    """Every run still to do, repeat-major: the first repeat of every cell comes before any second
    one, so an interrupted grade has a first look at the whole table."""
    jobs = []
    packed: dict[str, bytes] = {}
    for k in range(1, request.repeats + 1):
        for row in rows:
            if row.problem:
                continue
            for c in request.matrix.configs:
                key = f"{row.name}/{c.name}/{k}"
                if key in done and done[key].graded:
                    continue
                if not row.is_control and row.name not in packed:
                    packed[row.name] = pack_submission(Path(row.solution))
                jobs.append(
                    RunJob(
                        student=row.name,
                        config=c.name,
                        repeat=k,
                        seed=run_seed(request.seed, row.name, c.name, k),
                        lab=request.lab,
                        solution=row.solution,
                        options=tuple(c.argv()),
                        submission=None if row.is_control else packed[row.name],
                        timeout=request.run_timeout or c.time_bound() + RUN_MARGIN,
                        chaos=request.chaos,
                        kept_at=str(
                            (request.out / ledger.run_folder(row.name, c.name, k)).absolute()
                        ),
                    )
                )
    return jobs


class Eta:
    """Progress lines with an estimate of the time left, from this session's mean run rate."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.done, self.say = total, 0, say
        self.t0 = time.monotonic()

    def tick(self, r: RunResult) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.t0
        left = (self.total - self.done) * elapsed / self.done
        what = r.status + (f" ({r.anomaly or r.message})" if r.anomaly or r.message else "")
        self.say(
            f"[{self.done}/{self.total}] {r.student} x {r.config} r{r.repeat}: "
            f"{shortened(what, 120)} in {r.seconds:.0f} s; ETA {_clock(left)}"
        )


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def grade(
    request: GradeRequest,
    *,
    controls: Mapping[str, str],
    scheduler: str | None = None,
    parallel: int = 1,
    progress: Callable[[str], None] = lambda m: None,
    client: Any = None,
    security: Any = None,
) -> GradeOutcome:
    """Grade, recording each run as it finishes; write the reports (also when interrupted, with
    what finished). ``client``: an existing Dask client (tests); else one is made from
    ``scheduler`` (with ``security``: see chaos.grade.certs) or a local cluster of ``parallel``
    slots."""
    # the rows first: a submissions folder that cannot be read leaves no grade.json behind
    rows = rows_of(request, controls)
    book = ledger.Ledger(request.out)
    book.write_manifest(request.to_json())
    done = book.finished()
    jobs = plan(request, rows, done)
    skipped = sum(1 for r in done.values() if r.graded)
    _say_plan(rows, len(jobs), skipped, progress)
    _say_estimate(request, rows, None if scheduler or not jobs else parallel, skipped, progress)
    eta = Eta(len(jobs), progress)
    workers: dict[str, int] = {}

    def on_done(job: RunJob, got: Finished | BaseException) -> None:
        if isinstance(got, Finished):
            if got.result.status == "interrupted":
                return  # not a result: done again on resume
            result = _unpacked(request.out, job, got)
            workers[result.worker] = workers.get(result.worker, 0) + 1
        else:
            result = _not_run(job, got, attempts=request.retries + 1)
        book.append(result)
        eta.tick(result)

    interrupted = False
    try:
        if jobs and client is not None:
            dispatch.run_all(client, jobs, on_done, retries=request.retries)
        elif jobs:
            _run_on_cluster(jobs, on_done, request.retries, scheduler, parallel, security, progress)
    except KeyboardInterrupt:
        interrupted = True
        progress("interrupted: stopping the runs under way (each heals and tears down)")
        stopped = stop_all()
        if stopped:
            progress(f"stopped {stopped} run(s); `chaos grade --resume {request.out}` goes on")
    ctable = table.build(rows, request.matrix, book.finished().values())
    paths = report.write_all(request.out, ctable, request.to_json())
    return GradeOutcome(
        out=request.out,
        table=ctable,
        reports=paths,
        interrupted=interrupted,
        ran=eta.done,
        skipped=skipped,
        workers=workers,
    )


def _say_estimate(
    request: GradeRequest,
    rows: list[Submission],
    parallel: int | None,
    skipped: int,
    progress: Callable[[str], None],
) -> None:
    """On this machine (``parallel`` runs at a time; None: elsewhere, or nothing to run): the
    estimate is the measured throughput's (chaos.grade.estimate)."""
    if parallel is None:
        return
    plan = estimate.plan_of(rows, request.matrix, request.repeats, parallel, skipped)
    progress(plan.lines()[1])


def _say_plan(
    rows: list[Submission], jobs: int, skipped: int, progress: Callable[[str], None]
) -> None:
    for row in rows:
        if row.problem:
            progress(f"{row.name}: not run: {row.problem}")
    progress(f"{jobs} run(s) to do" + (f", {skipped} already done" if skipped else ""))


def _unpacked(out: Path, job: RunJob, got: Finished) -> RunResult:
    """A finished run's result, its stored folder unpacked under the grade's folder ``out`` (the
    result's ``run_dir`` then relative to it)."""
    result = got.result
    rel = ledger.run_folder(job.student, job.config, job.repeat)
    if got.archive:
        dest = out / rel
        shutil.rmtree(dest, ignore_errors=True)  # a torn copy of an earlier attempt
        unpack(got.archive, dest)
        result = result.with_(run_dir=rel)
    return result


def _not_run(job: RunJob, got: BaseException, *, attempts: int) -> RunResult:
    """The record of a job that never produced a run (its environment failed every attempt)."""
    why = str(got) if isinstance(got, RunEnvironmentError) else f"{type(got).__name__}: {got}"
    return RunResult(
        student=job.student,
        config=job.config,
        repeat=job.repeat,
        seed=job.seed,
        status="env-error",
        message=why[:500],
        command=job.command(),
        attempts=attempts,
    )


def _run_on_cluster(
    jobs: list[RunJob],
    on_done: Callable[[RunJob, Finished | BaseException], None],
    retries: int,
    scheduler: str | None,
    parallel: int,
    security: Any,
    progress: Callable[[str], None],
) -> None:
    """Run ``jobs`` on the Dask cluster at ``scheduler`` (else a local one of ``parallel``
    slots)."""
    with dispatch.connect(scheduler, parallel, security) as c:
        if scheduler and not dispatch.has_run_slots(c):
            progress(
                "warning: no worker declares the 'runs' resource "
                "(dask worker ... --resources runs=N): runs are not limited per host"
            )
        dispatch.run_all(c, jobs, on_done, retries=retries)
