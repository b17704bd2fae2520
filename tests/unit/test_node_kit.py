"""What the backends share (chaos.cluster.node_kit): one reading of a process table asked two ways,
a run's owner, the undo ops a reaper carries out, and the node software both install.

The process-table tests use real processes of this machine: a sleeping one, a stopped one, a
zombie, a gone one, and one whose leader thread has exited while another thread still runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cluster.docker import image
from chaos.cluster.docker.reap import HANDLED_OPS as DOCKER_OPS
from chaos.cluster.node_kit import proctable, software, undo
from chaos.cluster.node_kit.owner import owner_alive, owner_token
from chaos.cluster.node_kit.undo import UndoOp
from chaos.cluster.ssh import install
from chaos.cluster.ssh.remote import HANDLED_OPS as SSH_OPS
from chaos.nemesis import table

# the raw exit(2) syscall ends the calling thread only (Python's exits end the whole group)
SYS_EXIT = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine)

LEADER_EXITS = """
import ctypes, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=False).start()
sys.stdout.write("ready\\n"); sys.stdout.flush()
ctypes.CDLL(None, use_errno=True).syscall({nr}, 0)
"""


def _until(what: str, fact: object, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if callable(fact) and fact():
            return
        time.sleep(0.01)
    raise AssertionError(f"not seen within {deadline} s: {what}")


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[tuple[Path, dict[str, int]]]:
    """A pid folder naming real processes in every state the readers must tell apart."""
    pids = tmp_path / "pids"
    pids.mkdir()
    started: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], **kw: object) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(argv, **kw)  # type: ignore[call-overload]
        started.append(p)
        return p

    named: dict[str, int] = {}
    named["sleeping"] = start(["sleep", "60"]).pid
    stopped = start(["sleep", "60"])
    os.kill(stopped.pid, signal.SIGSTOP)
    named["stopped"] = stopped.pid
    zombie = start(["true"])  # never waited for until teardown: it stays a zombie
    named["zombie"] = zombie.pid
    gone = subprocess.Popen(["true"])
    gone.wait()
    named["gone"] = gone.pid
    if SYS_EXIT is not None:
        lead = start(
            [sys.executable, "-c", LEADER_EXITS.format(nr=SYS_EXIT)], stdout=subprocess.PIPE
        )
        assert lead.stdout is not None and lead.stdout.readline() == b"ready\n"
        named["leader-exited"] = lead.pid
    _until("the stopped sleep is stopped", lambda: proctable.state(stopped.pid) == "T")
    _until("the zombie is a zombie", lambda: proctable.state(zombie.pid) == "Z")
    if SYS_EXIT is not None:
        _until("the leader is a zombie", lambda: proctable.state(named["leader-exited"]) == "Z")
    for name, pid in named.items():
        (pids / f"{name}.pid").write_text(f"{pid}\n")
    (pids / "empty.pid").write_text("")
    try:
        yield pids, named
    finally:
        for p in started:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()


def test_the_shell_and_the_python_readings_of_a_process_table_agree(
    procs: tuple[Path, dict[str, int]],
) -> None:
    pids, named = procs
    out = subprocess.run(
        ["sh", "-c", proctable.STATUS.format(pids=pids)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    seen = proctable.parse_status(out.stdout)
    assert set(seen) == set(named)  # an empty pid file names nothing
    for name, pid in named.items():
        assert seen[name].pid == pid
        assert seen[name].alive == proctable.alive(pid), name
        assert seen[name].state == (proctable.state(pid) or "-"), name
    assert seen["sleeping"].alive and seen["sleeping"].state in ("S", "R")
    assert seen["stopped"].alive and seen["stopped"].state == "T"
    assert not seen["zombie"].alive and seen["zombie"].state == "Z"
    assert not seen["gone"].alive and seen["gone"].state == "-"
    if SYS_EXIT is not None:
        # the leader is a zombie, yet its other thread still runs (and would hold its sockets)
        assert seen["leader-exited"].alive and seen["leader-exited"].state == "Z"


def test_a_missing_pid_folder_and_stray_lines_read_as_nothing(tmp_path: Path) -> None:
    out = subprocess.run(
        ["sh", "-c", proctable.STATUS.format(pids=tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout == ""
    assert proctable.parse_status("motd line\nw 12 y S extra\nw x y S\n") == {}


def test_an_owner_token_names_a_live_process_by_pid_and_start_time() -> None:
    me = owner_token(os.getpid())
    assert owner_alive(me)
    pid, start = me.split(":")
    assert not owner_alive(f"{pid}:{int(start) + 1}")  # the pid reused by another process
    p = subprocess.Popen(["true"])
    token = owner_token(p.pid)
    p.wait()
    assert not owner_alive(token)
    for bad in (None, "", "12", "x:1", "-1:5"):
        assert not owner_alive(bad)


def test_every_undo_op_the_fault_table_names_is_one_a_reaper_knows() -> None:
    assert {str(op) for op in UndoOp} >= table.REAP_OPS, table.REAP_OPS - set(UndoOp)
    assert set(UndoOp) >= DOCKER_OPS | SSH_OPS
    assert UndoOp.THAW not in SSH_OPS  # no freeze over SSH, so nothing to thaw


def test_a_dead_runs_undo_entries_are_read_from_its_ledger(tmp_path: Path) -> None:
    live = tmp_path / "run" / "live"
    live.mkdir(parents=True)
    assert undo.recorded(str(live)) == [] and undo.recorded(None) == []
    faults = [
        {"reap": [{"op": "sigcont", "token": "1:2"}, "junk", {"op": "iptables-flush"}]},
        {"reap": [{"op": "sigcont", "token": "3:4"}]},
        "not a fault",
    ]
    (live.parent / "faults.json").write_text(json.dumps(faults))
    recorded = undo.recorded(str(live))
    assert len(recorded) == 2
    assert [r["token"] for r in undo.entries(recorded, UndoOp.SIGCONT)] == ["1:2", "3:4"]
    assert list(undo.entries(recorded, UndoOp.THAW)) == []
    (live.parent / "faults.json").write_text("{not json")
    assert undo.recorded(str(live)) == []


def test_both_backends_install_the_same_node_software() -> None:
    assert image.WHEELS is software.WHEELS and install.WHEELS is software.WHEELS
    assert software.wheel_names() == [w.split("==")[0] for w in software.WHEELS]
    v = software.versions()
    assert v["etcd"] == "3.5.1" and v["nats-server"] == "2.15.1"
