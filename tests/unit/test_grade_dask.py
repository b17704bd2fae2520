"""A grade on a real Dask deployment: `dask scheduler` and two `dask worker` processes on this
machine (127.0.0.1, free ports), the in-memory lab3 so that runs take seconds. One worker is
killed mid-grade: its run goes to the other, the table is complete and right, and runs landed on
both workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from chaos.grade import ledger, matrix
from chaos.grade.session import GradeRequest, grade
from tests.fixtures.grade_class import CHAOS, REPO, make_class
from tests.fixtures.grade_cli import MATRIX, GradedMemoryLab3


def _wait_scheduler(path: Path, proc: subprocess.Popen[bytes], log: Path) -> str:
    """The scheduler's address once it wrote its file (it does so once it listens)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.is_file():
            with contextlib.suppress(ValueError):
                return str(json.loads(path.read_text())["address"])
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"the scheduler did not start:\n{log.read_text(errors='replace')}")


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # workers import this checkout's chaos
    with open(log, "wb") as fh:
        return subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _wait_workers(client: object, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(client.scheduler_info()["workers"]) >= n:  # type: ignore[attr-defined]
            return
        time.sleep(0.2)
    raise AssertionError(f"{n} workers did not join in {timeout} s")


def test_grade_on_a_scheduler_survives_a_dead_worker(tmp_path: Path) -> None:
    from distributed import Client

    # the scheduler picks its own port and writes it to a file: no port handed over that someone
    # else may take between the look-up and the bind
    sched_file = tmp_path / "scheduler.json"
    py = sys.executable
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            _start(
                [py, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                 "--port", "0", "--dashboard-address", "127.0.0.1:0",
                 "--scheduler-file", str(sched_file)],
                tmp_path / "scheduler.log",
            )
        )  # fmt: skip
        address = _wait_scheduler(sched_file, procs[0], tmp_path / "scheduler.log")
        workers = {}
        for name in ("w1", "w2"):
            p = _start(
                [py, "-m", "distributed.cli.dask_worker", address, "--name", name,
                 "--nthreads", "2", "--resources", "runs=1", "--no-dashboard",
                 "--host", "127.0.0.1", "--death-timeout", "60"],
                tmp_path / f"{name}.log",
            )  # fmt: skip
            procs.append(p)
            workers[name] = p
        subs = make_class(tmp_path / "subs", "alice", "bob")
        out = tmp_path / "out"
        req = GradeRequest(
            lab="memory-lab3",
            submissions=subs,
            matrix=matrix.load(MATRIX),
            repeats=1,
            seed=3,
            out=out,
            chaos=CHAOS,
        )
        killed: list[str] = []

        def kill_w2_once_both_worked() -> None:
            # once both workers have finished a run, w2 is at work on its next one: kill it
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                path = out / ledger.LEDGER
                if path.exists():
                    seen = {json.loads(x)["worker"] for x in path.read_text().splitlines() if x}
                    if len(seen) >= 2:
                        w2 = workers["w2"]
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(w2.pid, signal.SIGKILL)
                        killed.append("w2")
                        return
                time.sleep(0.1)

        with Client(address, timeout="60s") as client:
            _wait_workers(client, 2)
            w2_address = next(
                a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "w2"
            )
            killer = threading.Thread(target=kill_w2_once_both_worked, daemon=True)
            killer.start()
            got = grade(req, controls=GradedMemoryLab3.grade_controls, client=client)
            killer.join(5)
            after = set(client.scheduler_info()["workers"])
        assert killed == ["w2"], "the grade ended before both workers had finished a run"
        assert w2_address not in after

        lines = [json.loads(x) for x in (out / ledger.LEDGER).read_text().splitlines()]
        keys = [(x["student"], x["config"]) for x in lines]
        # complete: 4 rows x 2 configurations, each once, none lost with the dead worker
        assert len(keys) == len(set(keys)) == 8, keys
        assert all(x["status"] in ("valid", "invalid") for x in lines), lines
        assert len({x["worker"] for x in lines}) == 2
        assert w2_address in {x["worker"] for x in lines}

        cells = {
            (r.name, c): (cell.tally.passes, cell.tally.runs)
            for r in got.table.rows
            for c, cell in r.cells.items()
        }
        for good in ("control:reference", "alice"):
            assert cells[(good, "pause")] == (1, 1) and cells[(good, "quiet")] == (1, 1)
        for bad in ("control:no-dedup", "bob"):
            assert cells[(bad, "pause")] == (0, 1) and cells[(bad, "quiet")] == (1, 1)
        # every run's folder came back as bytes in its task's result (workers never write to out/)
        for x in lines:
            assert (out / str(x["run_dir"]) / "results.json").is_file()
    finally:
        for p in reversed(procs):
            _stop(p)
