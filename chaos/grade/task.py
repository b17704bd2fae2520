"""One run of one submission under one configuration: the Dask task.

The run is ``chaos run`` itself, in a process of its own, with ``--store`` pointed at a temporary
folder: a fork of a warm process that has chaos imported (chaos.grade.warm; no interpreter start
and imports per run), or with ``CHAOS_GRADE_WARM=0`` or a ``--chaos-command`` of another
interpreter, a subprocess. Why a process rather than calling ``run_test`` in the worker's thread:

- the same code path as a student's own ``chaos run`` (option parsing, preflight, exit codes), so
  the command in the report's tooltip re-runs exactly what was graded;
- ``run_test`` heals and tears down on SIGINT/SIGTERM only in a main thread: in its own process a
  run that must stop (Ctrl-C, a time-out, the worker dying) still removes its containers;
- a solution that wedges or crashes the run cannot take the Dask worker with it, and a hang is
  bounded by a time-out that kills the run's whole process group.

The submission goes to the worker as zip bytes in the job, and the run folder comes back as zip
bytes in the task's result, so workers need not share a filesystem with the grading machine. This module is imported by workers: it must stay importable
at top level, and its records must pickle.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chaos.exits import Exit
from chaos.grade import warm
from chaos.histories.files import read_input
from chaos.histories.limits import MAX_INPUT_BYTES

# chaos run's verdict statuses
EXIT_VERDICT: dict[int, str] = {
    Exit.VALID: "valid",
    Exit.INVALID: "invalid",
    Exit.UNKNOWN: "unknown",
}
# folders of a run that are not worth bringing back: the live exchange with the nodes, and the
# copy of the solution the nodes saw (the grader has the submission itself)
SKIP = ("live", "mounts")
# after SIGTERM a run heals and tears down; give it this long before SIGKILL
TERM_GRACE = 60.0
DETAILS = re.compile(r"; details in \S+$")


class RunEnvironmentError(Exception):
    """The run could not happen for a reason that is not the solution's (no engine, image build,
    cluster error: ``chaos run`` exit 4). Raised so that Dask retries the task; a run that keeps
    failing so is shown as an environment error, never graded."""


@dataclass(frozen=True, slots=True)
class RunJob:
    """Everything a worker needs for one run; ``chaos`` is how to call chaos there (None: this
    Python's ``-m chaos.cli``, resolved on the worker)."""

    student: str
    config: str
    repeat: int
    seed: int
    lab: str
    solution: str
    options: tuple[str, ...] = ()
    # the submission's folder, zipped, so that workers need not see the grader's disk (None: a
    # built-in solution, which every worker has)
    submission: bytes | None = field(default=None, repr=False)
    timeout: float = 600.0
    chaos: tuple[str, ...] | None = None
    # where the grade keeps the run once it came back (its page names that folder, not the
    # worker's temporary store)
    kept_at: str | None = None

    @property
    def key(self) -> str:
        return f"{self.student}/{self.config}/{self.repeat}"

    def run_argv(self, solution: str | None = None) -> list[str]:
        return [
            "run",
            self.lab,
            *self.options,
            "--seed",
            str(self.seed),
            "--solution",
            solution or self.solution,
        ]

    def command(self) -> str:
        """What re-runs this cell alone, as a user types it on the grading machine."""
        import shlex

        return "chaos " + shlex.join(self.run_argv())


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a finished run says, without its folder.

    ``status``: valid, invalid, unknown (the verdicts), ``rejected`` (the solution was refused
    before the run: preflight), ``error`` (the run broke, e.g. the solution crashed on import),
    ``timeout``, ``env-error`` (not graded), ``interrupted`` (not recorded: done again on resume).
    """

    student: str
    config: str
    repeat: int
    seed: int
    status: str
    exit_code: int | None = None
    checkers: tuple[str, ...] = ()  # the checkers that did not say valid
    anomaly: str | None = None  # the first of their sentences
    summaries: tuple[str, ...] = ()  # each of those checkers' sentence, in the same order
    message: str | None = None  # why a run that has no verdict has none
    seconds: float = 0.0
    worker: str = ""
    command: str = ""
    run_dir: str | None = None  # relative to the grade's out folder, once unpacked
    attempts: int = 1

    @property
    def key(self) -> str:
        return f"{self.student}/{self.config}/{self.repeat}"

    @property
    def graded(self) -> bool:
        return self.status not in ("env-error", "interrupted")

    @property
    def passed(self) -> bool:
        return self.status == "valid"

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__} | {
            "checkers": list(self.checkers),
            "summaries": list(self.summaries),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> RunResult:
        known = {k: v for k, v in d.items() if k in RunResult.__dataclass_fields__}
        known["checkers"] = tuple(known.get("checkers") or ())
        known["summaries"] = tuple(known.get("summaries") or ())
        return RunResult(**known)

    def with_(self, **changes: Any) -> RunResult:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Finished:
    result: RunResult
    archive: bytes = field(default=b"", repr=False)  # the run folder, zipped


# ---------------------------------------------------------------- the children of this process

# a run under way: `chaos run` in a subprocess, or a fork of the warm process (the same pid/wait)
_Child = subprocess.Popen[bytes] | warm.WarmRun
_children: set[_Child] = set()
_lock = threading.Lock()


def stop_all(grace: float = TERM_GRACE) -> int:
    """SIGTERM every run this process started and wait for them to heal and tear down (Ctrl-C on
    the grading machine, whose local workers run in its own process); returns how many."""
    with _lock:
        procs = list(_children)
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    return len(procs)


def _own_session_dying_with_parent() -> None:
    """In the child before exec: its own process group (a time-out kills the run's group, never
    the worker), and SIGTERM when the worker dies, so an orphaned run heals and removes its
    cluster instead of running on. Only async-signal-safe calls here (see warm.PRCTL)."""
    os.setsid()
    if warm.PRCTL is not None:
        warm.PRCTL(warm.PR_SET_PDEATHSIG, int(signal.SIGTERM))


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


# ---------------------------------------------------------------- the task


def run_one(job: RunJob) -> Finished:
    """Run ``job`` and return its result with its run folder zipped. Raises RunEnvironmentError
    (for Dask to retry) when the run failed for a reason of the environment."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chaos-grade-") as tmp:
        store = Path(tmp) / "store"
        solution = None
        if job.submission is not None:
            # the worker's own copy, under the student's folder name
            solution = str(Path(tmp) / "submission" / Path(job.solution).name)
            unpack(job.submission, Path(solution))
        argv = [*job.run_argv(solution), "--store", str(store), "-q"]
        if job.kept_at is not None:
            argv += ["--stored-path", job.kept_at]
        if solution is not None:
            # the stored run names the submission and reproduces it from there, never from this
            # copy (deleted below)
            argv += ["--stored-command", job.command(), "--stored-solution", job.solution]
        out_path = Path(tmp) / "output.txt"
        proc = _start(job.chaos, argv, out_path)
        with _lock:
            _children.add(proc)
        try:
            code: int | None = proc.wait(job.timeout)
        except subprocess.TimeoutExpired:
            code = None
            _terminate(proc)
        finally:
            with _lock:
                _children.discard(proc)
        said = out_path.read_text(errors="replace")
        seconds = round(time.monotonic() - t0, 2)
        run_dir = _run_dir(store)
        base = RunResult(
            student=job.student,
            config=job.config,
            repeat=job.repeat,
            seed=job.seed,
            status="error",
            exit_code=code,
            seconds=seconds,
            worker=_worker_name(),
            command=job.command(),
        )
        if code == Exit.ENVIRONMENT:
            raise RunEnvironmentError(_reason(said) or "environment error (chaos run exit 4)")
        result = _classify(base, code, said, run_dir, job.timeout)
        return Finished(result=result, archive=_zip(run_dir) if run_dir else b"")


def _start(chaos: tuple[str, ...] | None, argv: list[str], out_path: Path) -> _Child:
    """The run: a fork of the warm process (chaos.grade.warm) when its command is this Python's
    ``-m MODULE`` (the default), else ``chaos run`` in a subprocess; either alone in its session,
    its output (stdout and stderr) in ``out_path``."""
    module = warm.module_of(chaos)
    if module is not None and warm.enabled():
        try:
            return warm.WarmRun(module, argv, str(out_path))
        except (EOFError, OSError):
            # the fork server died (it is started again by the next run, once it is reaped):
            # this run goes cold
            pass
    prefix = list(chaos) if chaos else [sys.executable, "-m", "chaos.cli"]
    with open(out_path, "wb") as out:
        return subprocess.Popen(
            [*prefix, *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_own_session_dying_with_parent,  # see its docstring
        )


def _terminate(proc: _Child) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(TERM_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _classify(
    base: RunResult, code: int | None, said: str, run_dir: Path | None, timeout: float
) -> RunResult:
    if code is None:
        return base.with_(status="timeout", message=f"no verdict after {timeout:.0f} s: stopped")
    if code == Exit.INTERRUPTED or code < 0:
        return base.with_(status="interrupted", message=_reason(said))
    if code == Exit.USAGE:
        return base.with_(status="rejected", message=_reason(said) or "refused by chaos run")
    if code in EXIT_VERDICT:
        checkers, summaries = _findings(run_dir)
        return base.with_(
            status=EXIT_VERDICT[code],
            checkers=checkers,
            summaries=summaries,
            anomaly=summaries[0] if summaries else None,
        )
    return base.with_(status="error", message=_reason(said) or f"chaos run exited {code}")


def _reason(said: str) -> str | None:
    """The last line ``chaos: ...`` of the run's output (its error message)."""
    lines = [ln.strip() for ln in said.splitlines() if ln.strip().startswith("chaos: ")]
    if not lines:
        return None
    # the log an internal error names differs per run: without it, equal reasons compare equal
    return DETAILS.sub("", lines[-1].removeprefix("chaos: "))[:500]


def _run_dir(store: Path) -> Path | None:
    found = [p.parent for p in store.glob("*/*/spec.json") if not p.parent.is_symlink()]
    return sorted(found)[-1] if found else None


def _findings(run_dir: Path | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The checkers that did not say valid, and their sentences (invalid first: the sentence
    shown for a run is its strongest finding)."""
    if run_dir is None:
        return (), ()
    try:
        doc = json.loads(read_input(run_dir / "results.json", MAX_INPUT_BYTES))
        bad = [r for r in doc.get("results", []) if r.get("verdict") != "valid"]
    except (OSError, ValueError, AttributeError):
        return (), ()
    bad.sort(key=lambda r: r.get("verdict") != "invalid")
    return (
        tuple(str(r.get("checker")) for r in bad),
        tuple(str(r.get("summary", ""))[:400] for r in bad),
    )


# what an archive between the grader and its workers may hold, uncompressed: a run folder with its
# logs (each service's log is cut at 32 MiB) or a submission (64 MiB, checked when it is found)
MAX_ARCHIVE_BYTES = 1 << 30
MAX_ARCHIVE_ENTRIES = 20_000


class ArchiveTooLarge(ValueError):
    """An archive (or a folder to archive) past :data:`MAX_ARCHIVE_BYTES` or its entry count."""


def _zip(run_dir: Path, skip: tuple[str, ...] = SKIP, *, limit: int = MAX_ARCHIVE_BYTES) -> bytes:
    buf = io.BytesIO()
    total, count = 0, 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(run_dir.rglob("*")):
            rel = p.relative_to(run_dir)
            if set(rel.parts) & set(skip) or p.is_symlink() or not p.is_file():
                continue
            total, count = total + p.lstat().st_size, count + 1
            if total > limit or count > MAX_ARCHIVE_ENTRIES:
                raise ArchiveTooLarge(
                    f"{run_dir}: more than {limit} bytes or {MAX_ARCHIVE_ENTRIES} files to pack"
                )
            z.writestr(rel.as_posix(), read_input(p, limit))
    return buf.getvalue()


def pack_submission(folder: Path) -> bytes:
    """A student's folder for the workers: its files (no links, caches or VCS folders), at most
    what a run copies of a solution."""
    return _zip(folder, ("__pycache__", ".git"), limit=64 << 20)


def unpack(archive: bytes, dest: Path) -> None:
    """Unpack a run folder; names are checked so that an archive cannot write outside ``dest``,
    and sizes before anything is written (the sizes an archive declares, then what each entry
    really inflates to: a zip bomb is refused, never written out)."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        infos = z.infolist()
        declared = sum(i.file_size for i in infos)
        if declared > MAX_ARCHIVE_BYTES or len(infos) > MAX_ARCHIVE_ENTRIES:
            raise ArchiveTooLarge(
                f"an archive of {len(infos)} entries and {declared} bytes uncompressed: more "
                f"than {MAX_ARCHIVE_ENTRIES} entries or {MAX_ARCHIVE_BYTES} bytes"
            )
        left = MAX_ARCHIVE_BYTES
        for info in infos:
            target = (dest / info.filename).resolve()
            if not target.is_relative_to(root) or info.is_dir():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(target, "wb") as fh:
                while chunk := src.read(min(1 << 20, left + 1)):
                    left -= len(chunk)
                    if left < 0:
                        raise ArchiveTooLarge(f"{info.filename} inflates past what was declared")
                    fh.write(chunk)
