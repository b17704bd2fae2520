"""`chaos check FILE --model M`, run as its own process, ends without freeing the history it
read (chaos.exits.keep_until_exit; chaos.cli.app.entry): the exit handlers still run, the whole
answer still reaches a pipe, the status is the verdict's. Called as a function (a test, a
program: chaos.cli.main), the command keeps nothing and exits as before."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos import exits
from chaos.cli import main

ROOT = Path(__file__).resolve().parents[2]

VALID = (
    "{:type :invoke, :f :write, :value [1 3], :time 1, :process 0, :index 0}\n"
    "{:type :ok, :f :write, :value [1 3], :time 2, :process 0, :index 1}\n"
    "{:type :invoke, :f :read, :value [1 nil], :time 3, :process 1, :index 2}\n"
    "{:type :ok, :f :read, :value [1 3], :time 4, :process 1, :index 3}\n"
)
STALE = VALID.replace(":value [1 3], :time 4", ":value [1 2], :time 4")

# The process's own entry point, with os._exit and an exit handler that say they ran.
_PROBE = """
import atexit, os, sys
real = os._exit
def said(code):
    print("os._exit", code, flush=True)
    real(code)
os._exit = said
atexit.register(lambda: print("exit handler ran", flush=True))
from chaos.cli.app import entry
sys.argv = ["chaos", *sys.argv[1:]]
entry()
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [(VALID, 0, "valid"), (STALE, 1, "invalid")],
    ids=["valid", "stale-read"],
)
def test_the_process_ends_without_freeing_and_says_everything(
    tmp_path: Path, text: str, code: int, said: str
) -> None:
    path = tmp_path / "history.edn"
    path.write_text(text)
    r = _run("check", str(path), "--model", "cas-register", "--independent")
    lines = r.stdout.splitlines()
    assert r.returncode == code, r.stdout + r.stderr
    assert f"verdict: {said}" in lines
    # the exit handlers ran, then the process ended without Python's teardown
    assert lines[-2:] == ["exit handler ran", f"os._exit {code}"], lines
    if code:
        assert "read() -> 2" in r.stdout  # the evidence got through the pipe whole
    r = _run("check", str(path), "--model", "cas-register", "--independent", "--json")
    assert r.returncode == code
    doc = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert doc["verdict"] == said


def test_a_refusal_still_reaches_stderr_and_nothing_kept_exits_as_before(tmp_path: Path) -> None:
    path = tmp_path / "history.edn"
    path.write_text("{:type :invoke, :f :dequeue, :value nil, :time 1, :process 0, :index 0}\n")
    r = _run("check", str(path), "--model", "cas-register")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "which the cas-register model does not know" in r.stderr
    assert r.stdout.splitlines() == ["exit handler ran", "os._exit 3"]
    # no history read, nothing kept: Python's own exit
    r = _run("check", str(tmp_path / "absent.edn"), "--model", "cas-register")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["exit handler ran"]


def test_called_as_a_function_the_command_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exits, "_kept", None)
    path = tmp_path / "history.edn"
    path.write_text(VALID)
    r = CliRunner().invoke(main, ["check", str(path), "--model", "cas-register", "--independent"])
    assert r.exit_code == 0, r.output
    assert not exits.holds_kept() and exits._kept is None


def test_keep_until_exit_keeps_only_when_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exits, "_kept", None)
    exits.keep_until_exit([1, 2, 3])
    assert not exits.holds_kept()
    exits.hold_until_exit()
    assert not exits.holds_kept()
    thing = [1, 2, 3]
    try:
        exits.keep_until_exit(thing)
        assert exits.holds_kept() and exits._kept is not None and exits._kept[0] is thing
    finally:
        gc.unfreeze()  # keep_until_exit moved this process's objects out of the collector's way
