"""Integration tests run the real thing: Docker engine, etcd, NATS JetStream, SIGSTOP, iptables.

They do not skip when the engine is missing: CI installs and starts it (scripts/bootstrap), and a
silently skipped scenario would be a lie about what was tested.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


# The modules that took longest, longest first (docs/benchmarks.md, "The suite's length"). They
# run first, so that the two pytest-xdist workers of scripts/test (one module each at a time) do
# not end on one of them while the other worker waits idle.
LONGEST_FIRST = (
    "test_ssh.py",
    "test_nemesis_trigger.py",
    "test_lab1.py",
    "test_confinement_quotas.py",
    "test_lab3.py",
    "test_detection.py",
    "test_trusted_verdicts.py",
    "test_report_rerender.py",
    "test_hostile.py",
    "test_grade.py",
    "test_etcd_txn.py",
    "test_redteam_record.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    ours = [i for i, item in enumerate(items) if HERE in item.path.parents]
    # a stable sort: each module's tests stay together and in their order
    ordered = sorted((items[i] for i in ours), key=lambda it: rank.get(it.path.name, len(rank)))
    for i, item in zip(ours, ordered, strict=True):
        items[i] = item


def _lock_files(run_uid: str) -> tuple[Path, Path]:
    base = Path(tempfile.gettempdir()) / f"chaos-integration-{run_uid}"
    return base.with_suffix(".turnstile"), base.with_suffix(".lock")


@contextlib.contextmanager
def _turn(run_uid: str, exclusive: bool) -> Iterator[None]:
    """Under pytest-xdist (scripts/test runs these tests in two workers), a test marked
    ``exclusive`` runs while no other test of the session does; the others run side by side.

    Readers and writers over two lock files: every test takes the turnstile for a moment and then
    the shared lock (shared); an exclusive test keeps the turnstile (so no new test starts behind
    it) and waits for the shared lock outright, that is for the other worker's test in flight.
    The locks are the kernel's (flock): a worker that dies releases them."""
    turnstile, shared = _lock_files(run_uid)
    with open(turnstile, "a") as gate, open(shared, "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # both files' locks go with their close


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    # around the whole protocol, so that the module fixtures a test sets up (runs of their own)
    # and tears down are inside its turn too
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if uid is None or HERE not in item.path.parents:
        return (yield)
    with _turn(uid, exclusive=item.get_closest_marker("exclusive") is not None):
        return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # a worker that has finished runs no test that could need the files; a worker still running
    # tests has no other test to take turns with (a new file is as good as the old one)
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if uid is not None:
        for path in _lock_files(uid):
            path.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def engine() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:  # pragma: no cover - environment problem
        pytest.fail(f"no Docker engine ({e}); run scripts/bootstrap first")
    return client


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


def chaos(
    *args: str, store: Path | None, timeout: float = 300, page: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in a subprocess. A ``chaos run`` skips its HTML page unless
    ``page`` (about 2 s a run, nothing a verdict rests on; tests/integration/test_lab3.py and the
    report's own tests render it)."""
    extra = ["--store", str(store)] if store is not None else []
    if args[:1] == ("run",) and not page:
        extra.append("--no-html")
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args, *extra],
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )  # fmt: skip


def chaos_bg(*args: str, store: Path) -> subprocess.Popen[str]:
    """Start the CLI in the background; a ``chaos run`` without its page, as :func:`chaos`."""
    extra = ["--store", str(store)] + (["--no-html"] if args[:1] == ("run",) else [])
    return subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", *args, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        start_new_session=True,
    )  # fmt: skip


def run_dir_from(proc: subprocess.CompletedProcess[str]) -> Path:
    """The run folder a `chaos run` printed; on failure, everything it said (stderr included)."""
    for line in proc.stdout.splitlines():
        if line.startswith("stored in "):
            return Path(line.removeprefix("stored in ").strip())
    raise AssertionError(
        f"no run folder in the output of {proc.args} (exit {proc.returncode}):\n"
        f"{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()[1:] if x.strip()]


def wait_for_line(path: Path, pred: Any, timeout: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text().splitlines()[1:]:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if pred(obj):
                    return obj
        time.sleep(0.1)
    return None


def leftovers(client: docker.DockerClient, run_id: str) -> list[str]:
    flt = {"label": [f"chaos.run={run_id}"]}
    return [c.name for c in client.containers.list(all=True, filters=flt)] + [
        n.name for n in client.networks.list(filters=flt)
    ]


def interrupt(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> None:
    os.kill(proc.pid, sig)
