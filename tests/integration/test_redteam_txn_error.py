"""Red team, forged fault evidence on ``txn-error-complete`` (issue 20, "Why" 2): a solution that
swallows commit errors forges the fault's evidence — a claim file, a ``fault-point`` event with
an invented pid, a redelivery it causes itself. The point is fired by the nodes' etcd proxies and
confirmed by their journal, so the real fault hits the real bug: invalid, never valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.histories.store import load_run
from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

SOLUTION = REPO / "tests" / "fixtures" / "redteam" / "forged_txn_error"
# the default lab3 matrix's commit-error configuration (chaos/workloads/lab3/grade.yaml)
COMMIT_ERROR = ("--nemesis", "txn-error-complete", "-o", "ack_wait=1", "-o", "work_seconds=0.2",
                "--time-limit", "20", "--recovery-timeout", "15")  # fmt: skip


def test_a_forged_txn_error_does_not_hide_the_swallowed_error(tmp_path: Path) -> None:
    p = chaos("run", "lab3", "--solution", str(SOLUTION), "--seed", "1", *COMMIT_ERROR, "-q",
              store=tmp_path, timeout=240)  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    run = load_run(run_dir_from(p))
    results = {
        r["checker"]: r for r in json.loads((run.path / "results.json").read_text())["results"]
    }
    assert results["lost-tasks"]["verdict"] == "invalid"
    assert "answered 'duplicate'" in results["lost-tasks"]["summary"]
    # the forgery happened: an event with an invented pid
    assert any(e.kind == "fault-point" and e.pid == 4000000 for e in run.events)
    # the firing the run counts is the proxy's: its journal line and the ledger's node agree
    injected = [e for e in run.final["journal"]["entries"] if e.get("outcome") == "injected"]
    assert len(injected) == 1, injected  # once in the cluster
    heal = [
        o for o in run.history if o.f == "heal-txn-error-complete" and isinstance(o.value, dict)
    ]
    assert heal[-1].value["fired_by"] == "host" and heal[-1].value["node"] == injected[0]["node"]
    assert (
        f"the etcd proxy on {injected[0]['node']} failed a transaction"
        in (results["scenario-fired"]["summary"])
    )
