"""Red team: faults confirmed only by what the host observed.

Each solution in tests/fixtures/redteam/ forges the evidence of a fault as a student could from
inside the service process: a claim file made by a thread, a ``fault-point`` or ``crash`` event
with an invented pid, a claim of every arming it sees, a process that exits by itself at its
claim, a forged point that was never armed. On main two of them were judged VALID (the first two
cases). Each run here must end not valid, and say why in the host's terms; a crash in the
record must be the host's own kill, never the pid a service wrote.

The two measured attacks run in CI; their neighbours under ``-m slow``.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.integration.conftest import REPO, chaos, leftovers, read_jsonl, run_dir_from

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
# the default matrix's defaults (chaos/workloads/lab3/grade.yaml) and its configurations
DEFAULTS = ["-o", "ack_wait=1", "-o", "work_seconds=0.2", "--time-limit", "20",
            "--recovery-timeout", "15", "-q"]  # fmt: skip
COMMIT_ERROR = ["--nemesis", "txn-error-complete"]
WORKER_CRASH = ["--nemesis", "worker-crash-before-ack"]

# solution -> (configuration, what scenario-fired or the verdict must say)
MEASURED: dict[str, tuple[list[str], str]] = {
    "forged_claim_commit_error": (COMMIT_ERROR, "answered 'duplicate'"),
    "forged_crash_ack_before_commit": (
        WORKER_CRASH,
        "the host refused its claim: the claim names pid 4000000",
    ),
}
NEIGHBOURS: dict[str, tuple[list[str], str]] = {
    "forged_crash_event": (WORKER_CRASH, "worker-crash-before-ack never fired"),
    # a real crash at a moment of the thread's choosing: before any delivery, or while another
    # worker held the split delivery (which then completed)
    "claim_every_generation": (
        WORKER_CRASH,
        "did not observe the scenario's precondition|another process held it",
    ),
    "forged_unarmed_point": (COMMIT_ERROR, "an error taken for a duplicate"),
    # refused if the host looked after the exit, unconfirmed if it looked just before it
    "self_exit_at_claim": (
        WORKER_CRASH,
        "is not running|the host did not observe worker on",
    ),
}


def _run(name: str, config: list[str], store: Path) -> tuple[int, Path, str, float]:
    t0 = time.monotonic()
    p = chaos("run", "lab3", "--solution", str(REDTEAM / name), *config, "--seed", "7",
              *DEFAULTS, store=store, timeout=600)  # fmt: skip
    return p.returncode, run_dir_from(p), p.stdout + p.stderr, time.monotonic() - t0


def _all(
    cases: dict[str, tuple[list[str], str]], store: Path
) -> dict[str, tuple[int, Path, str, float]]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {n: pool.submit(_run, n, cfg, store) for n, (cfg, _) in cases.items()}
        return {n: f.result() for n, f in futures.items()}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path, str, float]]:
    return _all(MEASURED, tmp_path_factory.mktemp("redteam-measured"))


@pytest.fixture(scope="module")
def neighbours(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[int, Path, str, float]]:
    return _all(NEIGHBOURS, tmp_path_factory.mktemp("redteam-neighbours"))


def _results(run: Path) -> dict[str, dict[str, Any]]:
    return {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}


def _heal(run: Path, point: str) -> dict[str, Any]:
    heals = [
        o["value"] for o in read_jsonl(run / "history.jsonl")
        if o["f"] == f"heal-{point}" and isinstance(o.get("value"), dict)
    ]  # fmt: skip
    assert heals, f"no heal of {point} in the history"
    return dict(heals[-1])


def _not_valid(
    name: str, got: tuple[int, Path, str, float], says: str, engine: docker.DockerClient
) -> Path:
    code, run, out, took = got
    assert code in (1, 2), f"{name}: exit {code}\n{out}"
    assert "verdict: valid" not in out
    assert any(s in out for s in says.split("|")), out
    # ended by its own limits, with room for an engine stalled by the other stream
    assert took < 400, f"{name} took {took:.0f} s"
    spec = json.loads((run / "spec.json").read_text())
    assert leftovers(engine, spec["run_id"]) == []
    return run


def test_a_forged_claim_with_one_raise_no_longer_passes_commit_error(
    measured: dict[str, tuple[int, Path, str, float]], engine: docker.DockerClient
) -> None:
    name = "forged_claim_commit_error"
    run = _not_valid(name, measured[name], MEASURED[name][1], engine)
    results = _results(run)
    # txn-error-complete is the nodes' etcd proxies' to fire (the service user can neither arm
    # nor claim it): the thread's claim file and event change nothing, the proxy's failed
    # transaction reaches the swallowed error, and the task it loses is found
    assert results["lost-tasks"]["verdict"] == "invalid"
    heal = _heal(run, "txn-error-complete")
    assert heal.get("fired_by") == "host" and "claim" not in heal, heal
    # no forged claim or event can start: the services never see the arming (a root-only
    # control of the proxies); the same forgery with its event is test_redteam_txn_error.py's
    assert not [e for e in read_jsonl(run / "events.jsonl") if e.get("pid") == 4000000]


def test_a_forged_crash_with_an_invented_pid_kills_nothing_and_does_not_count(
    measured: dict[str, tuple[int, Path, str, float]], engine: docker.DockerClient
) -> None:
    name = "forged_crash_ack_before_commit"
    _, run, out, _ = measured[name]
    _not_valid(name, measured[name], MEASURED[name][1], engine)
    assert "exit (pid 4000000)" not in out
    heal = _heal(run, "worker-crash-before-ack")
    assert heal["claim"]["pid"] == 4000000 and "refused" in heal
    # the host signalled nothing and saw no exit: there is no crash in the record
    assert "killed_pid" not in heal and "exit_seen_at" not in heal
    assert not [o for o in read_jsonl(run / "history.jsonl") if o.get("fault") == "kill"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NEIGHBOURS))
def test_each_neighbouring_forgery_is_judged_not_valid_for_the_right_cause(
    name: str, neighbours: dict[str, tuple[int, Path, str, float]], engine: docker.DockerClient
) -> None:
    run = _not_valid(name, neighbours[name], NEIGHBOURS[name][1], engine)
    results = _results(run)
    if name == "forged_unarmed_point":
        # the real bug is caught, and the forged points appear nowhere as faults of the run
        assert results["lost-tasks"]["verdict"] == "invalid"
        history = read_jsonl(run / "history.jsonl")
        faults = {o.get("fault") for o in history if o.get("process") == "nemesis"}
        assert faults == {"txn-error-complete"}
        said = results["scenario-fired"]["summary"]
        assert "relay-crash-before-publish" not in said
        assert "worker-crash-before-ack" not in said
        return
    assert results["scenario-fired"]["verdict"] == "unknown"
    heal = _heal(run, "worker-crash-before-ack")
    if name == "claim_every_generation":
        # the claim was true to its name, so the host did kill: a real crash, at a moment the
        # scenario's precondition did not hold
        assert heal["exit_seen_at"] and heal["restarted_pid"] != heal["killed_pid"]
    if name == "forged_crash_event":
        assert "fired_at" not in heal and "killed_pid" not in heal
        assert [e for e in read_jsonl(run / "events.jsonl") if e["kind"] == "crash"]
    if name == "self_exit_at_claim":
        assert "exit_seen_at" not in heal
