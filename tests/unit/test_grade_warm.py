"""The warm worker (chaos.grade.warm): each run a fork of one process that has chaos imported. A
run that crashes (killing its own process group), hangs past its time-out, or kills the fork
server itself leaves the worker able to run the next one, which passes; every such run's process
is gone afterwards. In-memory lab3 on the fake backend: seconds a run, no Docker."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from chaos.grade import warm
from chaos.grade.task import RunJob, run_one
from tests.fixtures.grade_class import CHAOS, make_class

CRASHES = "import os, signal\nos.killpg(0, signal.SIGKILL)\n"  # its own group: itself only
HANGS = "import time\ntime.sleep(3600)\n"


@pytest.fixture
def pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process id of every warm run started (a run that did not go warm adds none)."""
    started: list[int] = []
    real = warm.WarmRun.__init__

    def record(self: warm.WarmRun, *args: object) -> None:
        real(self, *args)  # type: ignore[arg-type]
        started.append(self.pid)

    monkeypatch.setattr(warm.WarmRun, "__init__", record)
    monkeypatch.delenv(warm.ENV, raising=False)
    return started


def _job(subs: Path, name: str, timeout: float = 120.0) -> RunJob:
    return RunJob(
        student=name, config="quiet", repeat=1, seed=1, lab="memory-lab3",
        solution=str(subs / name), options=("--backend", "fake", "--time-limit", "2"),
        timeout=timeout, chaos=CHAOS,
    )  # fmt: skip


def _gone(pid: int) -> bool:
    """Neither the process nor anything left in its session (a run is a session leader)."""
    if Path(f"/proc/{pid}").exists():
        return False
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = p.joinpath("stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[3]) == pid:
                return False
    return True


def _class(tmp_path: Path) -> Path:
    subs = make_class(tmp_path / "subs", "alice")
    for name, source in (("crash", CRASHES), ("hang", HANGS)):
        (subs / name).mkdir()
        (subs / name / "protocol.py").write_text(source)
    return subs


def test_a_crashing_run_leaves_the_warm_worker_usable(tmp_path: Path, pids: list[int]) -> None:
    subs = _class(tmp_path)
    assert run_one(_job(subs, "alice")).result.status == "valid"
    server = warm.server_pid()
    assert server is not None and len(pids) == 1  # the run was a fork of the warm process

    crashed = run_one(_job(subs, "crash")).result
    # killed by a signal, as a `chaos run` subprocess so killed is: not a result, done again
    assert crashed.status == "interrupted" and crashed.exit_code == -9, crashed
    assert _gone(pids[1])
    # the same warm process, alive, and the next run passes
    assert warm.server_pid() == server and Path(f"/proc/{server}").exists()
    again = run_one(_job(subs, "alice")).result
    assert again.status == "valid", again
    assert len(pids) == 3 and warm.server_pid() == server


def test_a_hanging_run_is_killed_and_the_next_one_runs(tmp_path: Path, pids: list[int]) -> None:
    subs = _class(tmp_path)
    t0 = time.monotonic()
    hung = run_one(_job(subs, "hang", timeout=4.0)).result
    assert hung.status == "timeout" and "no verdict after 4 s" in (hung.message or ""), hung
    assert time.monotonic() - t0 < 60
    assert len(pids) == 1 and _gone(pids[0])
    server = warm.server_pid()
    assert server is not None and Path(f"/proc/{server}").exists()
    assert run_one(_job(subs, "alice")).result.status == "valid"
    assert warm.server_pid() == server and len(pids) == 2


def test_a_dead_warm_process_is_started_again(tmp_path: Path, pids: list[int]) -> None:
    subs = _class(tmp_path)
    assert run_one(_job(subs, "alice")).result.status == "valid"
    server = warm.server_pid()
    assert server is not None
    os.kill(server, 9)
    # the next run still runs (in a subprocess, if the dead server was not reaped yet), and a
    # later one goes warm again, on a new fork server
    got = run_one(_job(subs, "alice")).result
    assert got.status == "valid", got
    for _ in range(3):
        assert run_one(_job(subs, "alice")).result.status == "valid"
        if len(pids) > 1:
            break
    assert warm.server_pid() not in (None, server) and len(pids) > 1


def test_cold_runs_when_asked(
    tmp_path: Path, pids: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.ENV, "0")
    subs = _class(tmp_path)
    assert run_one(_job(subs, "alice")).result.status == "valid"
    assert pids == []  # a subprocess, not a fork
    assert warm.module_of(None) == "chaos.cli"
    assert warm.module_of(("/other/python", "-m", "chaos.cli")) is None
    assert warm.module_of(("chaos",)) is None
