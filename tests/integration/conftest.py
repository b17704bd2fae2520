"""Integration tests run the real thing: Docker engine, etcd, NATS JetStream, SIGSTOP, iptables.

They do not skip when the engine is missing: CI installs and starts it (scripts/bootstrap), and a
silently skipped scenario would be a lie about what was tested.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker
import pytest

REPO = Path(__file__).resolve().parents[2]


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
    return subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", *args, "--store", str(store)],
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
