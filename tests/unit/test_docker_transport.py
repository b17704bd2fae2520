"""The Docker reaper's transport signals only processes inside the dead run's own container.

A node's pid files and ledger tokens are read back by the reaper; a process of the code under test
could have written a host process's pid there (or the pid may have been reused since). The
transport checks, at the moment of the signal, that the pid is in the container's pid namespace.
Attacked here with real processes: a "container" made with ``unshare --pid`` (its init is the
namespace's PID 1, as a container's is), and a host process the reaper must never stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chaos.cluster.docker.procfs import pidns
from chaos.cluster.docker.transport import ContainerTransport
from chaos.cluster.node_kit.proctable import state

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a new pid namespace needs root")


@dataclass
class _Container:
    """What ContainerTransport reads of a Docker SDK container: its state and its init's host pid."""

    pid: int
    status: str = "running"
    name: str = "chaos-test-n1"
    labels: dict[str, str] = field(default_factory=lambda: {"chaos.node": "n1"})

    @property
    def attrs(self) -> dict[str, Any]:
        return {"State": {"Pid": self.pid}}

    def reload(self) -> None:
        pass


def _wait(pred: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def container_init() -> Iterator[int]:
    """The host pid of PID 1 of a fresh pid namespace (``unshare --pid --fork`` runs a sleep as it)."""
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sleep", "60"])
    try:
        init: list[int] = []

        def forked() -> bool:
            try:
                kids = Path(f"/proc/{outer.pid}/task/{outer.pid}/children").read_text().split()
            except OSError:
                return False
            init[:] = [int(k) for k in kids]
            return bool(init) and pidns(init[0]) not in (None, pidns(os.getpid()))

        _wait(forked, "unshare did not start its namespace's init")
        yield init[0]
    finally:
        outer.kill()
        outer.wait()


@pytest.fixture
def host_process() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen(["sleep", "60"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def test_a_host_pid_is_never_signalled(
    container_init: int, host_process: subprocess.Popen[bytes]
) -> None:
    t = ContainerTransport(_Container(container_init))
    # what a forged pid file in the node would make the reaper do
    assert t.signal(host_process.pid, signal.SIGSTOP) is False
    time.sleep(0.2)  # a SIGSTOP, had it been sent, is delivered by now
    assert state(host_process.pid) != "T", "a host process outside the container was stopped"
    assert host_process.pid not in [p.pid for p in t.processes()]


def test_a_pid_inside_the_container_is_signalled(container_init: int) -> None:
    t = ContainerTransport(_Container(container_init))
    assert container_init in [p.pid for p in t.processes()]
    assert t.signal(container_init, signal.SIGSTOP) is True
    _wait(lambda: state(container_init) == "T", "the container's process was not stopped")
    assert t.signal(container_init, signal.SIGCONT) is True
    _wait(lambda: state(container_init) != "T", "the container's process was not resumed")


def test_a_container_that_is_not_up_signals_nothing(host_process: subprocess.Popen[bytes]) -> None:
    t = ContainerTransport(_Container(pid=0, status="exited"))
    assert t.signal(host_process.pid, signal.SIGSTOP) is False
    assert t.processes() == []
    assert t.exec(["true"], timeout=5).exit_code != 0
