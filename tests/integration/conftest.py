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
# run first, so that a stream (or one of the two pytest-xdist workers of CHAOS_TEST_WORKERS=2)
# does not end on one of them while the other waits idle.
LONGEST_FIRST = (
    "test_ssh.py",
    "test_nemesis_trigger.py",
    "test_lab1.py",
    "test_confinement_quotas.py",
    "test_lab3.py",
    "test_detection.py",
    "test_hostile.py",
    "test_grade.py",
    "test_etcd_txn.py",
    "test_lab1_detection.py",
    "test_report_rerender.py",
)

# The modules scripts/test runs in its second stream, after the unit tests and beside the first
# stream (every other module, LONGEST_FIRST first). None of them runs more than one cluster at a
# time, so the two streams together never run more than one module of several clusters at once:
# the load stays that of the heaviest module beside the unit tests. `CHAOS_INTEGRATION_PART`
# (`second`, or `first` for the rest) selects one stream; unset, every module runs.
SECOND_STREAM = (
    "test_confinement_network.py",
    "test_nemesis_crash.py",
    "test_register.py",
    "test_nemesis_seed.py",
    "test_redteam_record.py",
    "test_explore_command.py",
    "test_clock_loss.py",
    "test_redteam_faults.py",
    "test_redteam_authors.py",
    "test_trusted_verdicts.py",
    "test_docs_samples.py",
    "test_lab1_service.py",
    "test_redteam_txn_error.py",
    "test_page_kinds_browser.py",
    "test_nemesis_faults.py",
    "test_report_browser.py",
    "test_confinement_egress.py",
    "test_lab1_protocol.py",
    "test_sequence_causal.py",
    "test_group_pairs.py",
    "test_write_effect.py",
)
PARTS = ("first", "second")


def _in_part(item: pytest.Item, part: str) -> bool:
    return (item.path.name in SECOND_STREAM) == (part == "second")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    part = os.environ.get("CHAOS_INTEGRATION_PART")
    if part is not None:
        if part not in PARTS:
            raise pytest.UsageError(
                f"CHAOS_INTEGRATION_PART={part!r}: expected one of {', '.join(PARTS)} (or unset "
                "for every integration module)"
            )
        other = [it for it in items if HERE in it.path.parents and not _in_part(it, part)]
        if other:
            config.hook.pytest_deselected(items=other)
            left = set(map(id, other))
            items[:] = [it for it in items if id(it) not in left]
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    ours = [i for i, item in enumerate(items) if HERE in item.path.parents]
    # a stable sort: each module's tests stay together and in their order
    ordered = sorted((items[i] for i in ours), key=lambda it: rank.get(it.path.name, len(rank)))
    for i, item in zip(ours, ordered, strict=True):
        items[i] = item


def _turns_uid() -> str | None:
    """The id the tests that take turns share: scripts/test's two streams' (``CHAOS_TEST_TURNS``)
    or pytest-xdist's workers'. None: this process runs alone, nothing to take turns with."""
    return os.environ.get("CHAOS_TEST_TURNS") or os.environ.get("PYTEST_XDIST_TESTRUNUID")


def _lock_files(run_uid: str) -> tuple[Path, Path]:
    base = Path(tempfile.gettempdir()) / f"chaos-integration-{run_uid}"
    return base.with_suffix(".turnstile"), base.with_suffix(".lock")


@contextlib.contextmanager
def _turn(run_uid: str, exclusive: bool) -> Iterator[None]:
    """Under scripts/test's two streams (or pytest-xdist's workers), a test marked ``exclusive``
    runs while no other integration test does; the others run side by side.

    Readers and writers over two lock files: every test takes the turnstile for a moment and then
    the shared lock (shared); an exclusive test keeps the turnstile (so no new test starts behind
    it) and waits for the shared lock outright, that is for the other stream's test in flight.
    The locks are the kernel's (flock): a process that dies releases them."""
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
    uid = _turns_uid()
    if uid is None or HERE not in item.path.parents:
        return (yield)
    with _turn(uid, exclusive=item.get_closest_marker("exclusive") is not None):
        return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # a stream that has finished runs no test that could need the files; one still running
    # tests has no other test to take turns with (a new file is as good as the old one)
    uid = _turns_uid()
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
