"""Red team, issue 29 "Why" 1 and 2: a solution correct only while it is being faulted.

``tests/fixtures/redteam/fault_aware`` is second-txn-dedup that takes the safe path at any sign of
a fault it can read (arm, hold and claim files, its own clock jumping) and puts a decoy
transaction in front of an unnumbered send path. Against the in-process point the default
matrix used to name (``kill worker after txn 1 of complete``) it is valid; against the point the
matrix names now, decided by the nodes' etcd proxies (``kill worker after write of counter``),
it is invalid for the same double apply as its plain control.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chaos.histories.store import load_run
from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

ATTACK = str(REPO / "tests" / "fixtures" / "redteam" / "fault_aware")
# lab3's default matrix's kill-between-complete-txns (chaos/workloads/lab3/grade.yaml)
MATRIX = ("-o", "ack_wait=1", "-o", "work_seconds=0.2", "--time-limit", "20",
          "--recovery-timeout", "15", "--seed", "4", "-q")  # fmt: skip
PROXY_POINT = "kill worker after write of counter"
IN_PROCESS_POINT = "kill worker after txn 1 of complete"


def _run(store: Path, solution: str, trigger: str) -> tuple[int, dict[str, Any], Any]:
    p = chaos("run", "lab3", "--solution", solution, "--trigger", trigger, *MATRIX,
              store=store, timeout=300)  # fmt: skip
    run = load_run(run_dir_from(p))
    results = {
        r["checker"]: r for r in json.loads((run.path / "results.json").read_text())["results"]
    }
    return p.returncode, results, run


def test_a_fault_aware_solution_is_caught_at_a_point_the_proxy_decides(tmp_path: Path) -> None:
    cases = {
        "attack, proxy point": (ATTACK, PROXY_POINT),
        "control, proxy point": ("second-txn-dedup", PROXY_POINT),
        "attack, in-process point": (ATTACK, IN_PROCESS_POINT),
    }
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {
            name: pool.submit(_run, tmp_path / str(i), sol, tr)
            for i, (name, (sol, tr)) in enumerate(cases.items())
        }
        got = {name: f.result() for name, f in futures.items()}
    # the trick works where the code under test can see the point: the fixture is fault-aware
    code, results, _ = got["attack, in-process point"]
    assert code == 0, results
    for name in ("attack, proxy point", "control, proxy point"):
        code, results, run = got[name]
        assert code == 1, (name, results)
        assert results["double-apply"]["verdict"] == "invalid", (name, results["double-apply"])
        assert (
            "changed the counter without writing the dedup record"
            in (results["double-apply"]["summary"])
        )
        # the firing is the proxy's: the sender found by the host, the held write's keys
        fired = [
            o.extra["trigger"] for o in run.history if isinstance(o.extra.get("trigger"), dict)
        ]
        assert fired and fired[0]["decided_by"] == "etcd-proxy", fired
        assert fired[0]["component"] == "worker" and "/lab3/counter" in fired[0]["keys"]
        assert results["scenario-fired"]["verdict"] == "valid"
    # the attack's decoy reached etcd (an empty transaction, journaled by the proxy) and its
    # real transactions went unnumbered: it did everything it could to move the point
    _, _, run = got["attack, proxy point"]
    txn_events = [e for e in run.events if e.kind == "txn" and e.component == "worker"]
    assert txn_events and all(e.data.get("n") == 1 for e in txn_events), txn_events


BLIND = str(REPO / "tests" / "fixtures" / "redteam" / "blind_aim")


# the abstention itself is tested without Docker (tests/unit/test_framework_fake.py)
@pytest.mark.slow
def test_a_pause_whose_aim_is_hidden_abstains_and_the_run_is_unknown(tmp_path: Path) -> None:
    """Aim or abstain ("Why" 6): check-then-act that never reports the computation lab3's own
    pause aims at is unknown under ``--nemesis pause`` (it was paused at random, and valid),
    while check-then-act itself is invalid under the same pause."""

    def run(store: Path, solution: str) -> tuple[int, dict[str, Any], Any]:
        p = chaos("run", "lab3", "--solution", solution, "--nemesis", "pause", *MATRIX,
                  store=store, timeout=300)  # fmt: skip
        run = load_run(run_dir_from(p))
        results = json.loads((run.path / "results.json").read_text())["results"]
        return p.returncode, {r["checker"]: r for r in results}, run

    with ThreadPoolExecutor(2) as pool:
        blind = pool.submit(run, tmp_path / "blind", BLIND)
        plain = pool.submit(run, tmp_path / "plain", "check-then-act")
        (code, results, stored), (plain_code, plain_results, _) = blind.result(), plain.result()
    assert code == 2, results
    assert results["complete-record"]["verdict"] == "unknown"
    assert "the pause fault never found its aim" in results["complete-record"]["summary"]
    # nothing was paused instead
    assert not [o for o in stored.history if o.f == "pause" and o.extra.get("phase") == "start"]
    assert plain_code == 1, plain_results
    assert plain_results["double-apply"]["verdict"] == "invalid"


ATTACK_LAB1 = str(REPO / "tests" / "fixtures" / "redteam" / "fault_aware_lab1")
# lab1's default matrix's stopped-before-write-commit, as it was (in-process) and as it is
LAB1_PROXY_POINT = "pause holder before write of orders for 6s"
LAB1_IN_PROCESS_POINT = "pause holder before write-commit for 5s"


# the same mechanism as lab3's, in CI above; lab1's own run is the slow pass
@pytest.mark.slow
def test_lab1_no_fencing_while_unarmed_is_caught_at_a_write_the_proxy_holds(
    tmp_path: Path,
) -> None:
    def run(store: Path, solution: str, trigger: str) -> tuple[int, dict[str, Any]]:
        p = chaos("run", "lab1", "--solution", solution, "--trigger", trigger, "--seed", "1",
                  "-q", store=store, timeout=300)  # fmt: skip
        results = json.loads((run_dir_from(p) / "results.json").read_text())["results"]
        return p.returncode, {r["checker"]: r for r in results}

    cases = {
        "attack, proxy point": (ATTACK_LAB1, LAB1_PROXY_POINT),
        "control, proxy point": ("no-fencing", LAB1_PROXY_POINT),
        "attack, in-process point": (ATTACK_LAB1, LAB1_IN_PROCESS_POINT),
    }
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {
            name: pool.submit(run, tmp_path / str(i), sol, tr)
            for i, (name, (sol, tr)) in enumerate(cases.items())
        }
        got = {name: f.result() for name, f in futures.items()}
    code, results = got["attack, in-process point"]
    assert code == 0, results  # it saw the arming and wrote fenced: the trick works there
    for name in ("attack, proxy point", "control, proxy point"):
        code, results = got[name]
        assert code == 1, (name, results)
        assert results["no-double-apply"]["verdict"] == "invalid", (name, results)
        assert "applied twice" in results["no-double-apply"]["summary"]


DECOY_SECOND_TXN = str(REPO / "tests" / "fixtures" / "redteam" / "decoy_second_txn")


def test_decoy_writes_neither_take_the_firing_nor_let_the_real_write_through(
    tmp_path: Path,
) -> None:
    """Blinding the aim of the proxy's write points ("Why" 6): a worker thread sends, every
    20 ms, a read of the counter, a rewrite of the counter's own value and a transaction behind
    a compare that always fails. A point that fired on the first matching write fired on those
    and second-txn-dedup's bug stayed hidden (measured before the fix: valid, seed 4). A write
    point fires only on a write that changes its group: the kill lands after the real commit.
    (The same decoys against the read hold of hold-after-check: the test below.)"""
    code, results, run = _run(tmp_path, DECOY_SECOND_TXN, PROXY_POINT)
    assert code == 1, results
    assert results["double-apply"]["verdict"] == "invalid", results["double-apply"]
    assert "incremented twice" in results["double-apply"]["summary"]
    assert (
        "changed the counter without writing the dedup record"
        in (results["double-apply"]["summary"])
    )
    fired = [o.extra["trigger"] for o in run.history if isinstance(o.extra.get("trigger"), dict)]
    assert fired and fired[0]["decided_by"] == "etcd-proxy", fired


DECOY_CALLS = str(REPO / "tests" / "fixtures" / "redteam" / "decoy_calls")
DECOY_IDLE = str(REPO / "tests" / "fixtures" / "redteam" / "decoy_idle_reads")
# the read hold lab3's hold-after-check had before it held the commit (grade.yaml): a read point
# is still a trigger anyone may name, and decoys must not blind it
HOLD_AFTER_CHECK = "hold worker before read of counter for 2.5s"


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["4", "9"])
def test_decoy_reads_do_not_take_a_read_points_firing(tmp_path: Path, seed: str) -> None:
    """Blinding the aim of a read point ("Why" 6): check-then-act with a worker thread that reads
    the counter every 20 ms, at any moment (``decoy_calls``, with the decoy writes above) or only
    while the worker handles no delivery, from its start on (``decoy_idle_reads``). A read point
    that fired on the first read of the counter fired on a decoy between deliveries, and the
    check-then-act bug stayed hidden (before the gate: ``decoy_idle_reads`` valid on seeds 4 and
    9). lab3's read points fire only on a read made while the reading node has a delivery in
    flight, as its NATS proxy saw it: a read between deliveries never fires, and a decoy read
    during one fires with the real read still to come, which is held with it. Beside them,
    check-then-act alone under the same trigger and seed: all invalid, ``double-apply``."""
    args = ("-o", "ack_wait=1", "-o", "work_seconds=0.2", "--time-limit", "20",
            "--recovery-timeout", "15", "--seed", seed, "-q")  # fmt: skip

    def run(store: Path, solution: str) -> tuple[int, dict[str, Any], Any]:
        p = chaos("run", "lab3", "--solution", solution, "--trigger", HOLD_AFTER_CHECK, *args,
                  store=store, timeout=400)  # fmt: skip
        run = load_run(run_dir_from(p))
        results = json.loads((run.path / "results.json").read_text())["results"]
        return p.returncode, {r["checker"]: r for r in results}, run

    cases = {"decoys": DECOY_CALLS, "idle decoys": DECOY_IDLE, "control": "check-then-act"}
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {name: pool.submit(run, tmp_path / name, sol) for name, sol in cases.items()}
        got = {name: f.result() for name, f in futures.items()}
    # every case's verdict first: a failure says which attack hid the bug
    verdicts = {
        name: (code, results["double-apply"]["verdict"]) for name, (code, results, _) in got.items()
    }
    assert all(v == (1, "invalid") for v in verdicts.values()), verdicts
    for name, (_, results, stored) in got.items():
        assert "counter incremented" in results["double-apply"]["summary"], name
        fired = [
            o.extra["trigger"] for o in stored.history if isinstance(o.extra.get("trigger"), dict)
        ]
        assert fired and fired[0]["decided_by"] == "etcd-proxy", (name, fired)
        assert fired[0]["component"] == "worker" and "/lab3/counter" in fired[0]["keys"], fired
        # the evidence: the delivery the reading node's NATS proxy had in flight at the read
        assert str(fired[0].get("delivery", "")).startswith("$JS.ACK."), (name, fired)


DECOY_FIRST = str(REPO / "tests" / "fixtures" / "redteam" / "decoy_first_read")
HELD_COMMIT = "hold worker before write of counter for 2.5s"


@pytest.mark.slow
def test_a_decoy_read_before_the_check_is_caught_at_the_held_commit(tmp_path: Path) -> None:
    """What a read point cannot tell, a write point can: ``decoy_first_read`` reads the counter
    first in each delivery, so a read point fires on that read and its hold ends before the
    check (docs/security.md: not defended at hold-after-check's read). Held at its commit
    instead (AckWait 1 s, as hold-after-check's), the redelivery commits meanwhile and the held
    transaction's retry applies the task again: invalid."""
    args = ("-o", "ack_wait=1", "-o", "work_seconds=0.2", "--time-limit", "20",
            "--recovery-timeout", "15", "--seed", "4", "-q")  # fmt: skip
    p = chaos("run", "lab3", "--solution", DECOY_FIRST, "--trigger", HELD_COMMIT, *args,
              store=tmp_path, timeout=400)  # fmt: skip
    run = load_run(run_dir_from(p))
    results = {
        r["checker"]: r for r in json.loads((run.path / "results.json").read_text())["results"]
    }
    assert p.returncode == 1, results
    assert results["double-apply"]["verdict"] == "invalid", results["double-apply"]
    fired = [o.extra["trigger"] for o in run.history if isinstance(o.extra.get("trigger"), dict)]
    assert fired and fired[0]["op"] == "write" and fired[0]["component"] == "worker", fired
