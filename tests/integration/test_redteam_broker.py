"""Red team, issue 29 ("fault-blind grading"): a solution that reads chaos's source and is wrong
but passes, one attack per class, each beside its plain buggy control, on real etcd and NATS.

- ``no_dedup_junk`` (scenario confirmation counts what any client can publish): no dedup, the
  lost-publish-ack step patched into a plain acknowledged publish plus one junk message. On main
  the stream's 4 messages for 3 tasks confirmed the scenario: VALID. Now the scenario counts only
  by two copies of one event chaos read from the stream itself: ``unknown``. Its control
  ``no_dedup``, under the same scenario, is caught (a copy really reached a worker).
- ``etcd_forbidden`` (side channels through etcd): the reference plus ``AuthEnable`` (on main it
  locked chaos out of etcd), compaction, members, a key outside the lab's prefix, a read of every
  key: each refused by the node's proxy, and the run ``invalid`` by ``etcd-scope``, chaos's final
  reads done. Its control is the reference (valid: ``test_lab3.py``, and the runs in
  docs/security.md).
- ``consumer_rewrite`` (the broker's configuration is the solution's to rewrite, ``-m slow``):
  check-then-act whose workers delete the durable consumer and make it again with a 120 s
  AckWait (on main: VALID under the hold-after-check trigger). The services' broker user is
  denied both, the configuration read back is chaos's, and the bug is caught as its control's.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
LOST_ACK = ("--nemesis", "lost-publish-ack")
HOLD_AFTER_CHECK = ("--trigger", "pause worker on delivery until commit")
CI: dict[str, tuple[str, tuple[str, ...]]] = {
    "no_dedup_junk": (str(REDTEAM / "no_dedup_junk"), LOST_ACK),
    "no_dedup": (str(REDTEAM / "no_dedup"), LOST_ACK),
    "etcd_forbidden": (str(REDTEAM / "etcd_forbidden"), ()),
}
SLOW: dict[str, tuple[str, tuple[str, ...]]] = {
    "consumer_rewrite": (str(REDTEAM / "consumer_rewrite"), HOLD_AFTER_CHECK),
    "check-then-act": ("check-then-act", HOLD_AFTER_CHECK),
}


def _run(name: str, cases: dict[str, tuple[str, tuple[str, ...]]], store: Path) -> Any:
    solution, config = cases[name]
    p = chaos("run", "lab3", "--solution", solution, *config, "--seed", "7", "-q",
              store=store, timeout=400)  # fmt: skip
    return name, p.returncode, run_dir_from(p), p.stdout + p.stderr


def _runs(cases: dict[str, tuple[str, tuple[str, ...]]], store: Path) -> dict[str, Any]:
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        done = pool.map(lambda n: _run(n, cases, store), cases)
        return {n: (code, run, out) for n, code, run, out in done}


@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _runs(CI, tmp_path_factory.mktemp("redteam-broker"))


def _result(run: Path, checker: str) -> dict[str, Any]:
    results = json.loads((run / "results.json").read_text())
    items = results["results"] if isinstance(results, dict) else results
    return dict(next(r for r in items if r["checker"] == checker))


def _probes(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((run / "live" / "events").glob("*-probe.jsonl"))
            for line in f.read_text().splitlines() if line]  # fmt: skip


def test_a_junk_publish_no_longer_confirms_lost_publish_ack(ci_runs: dict[str, Any]) -> None:
    code, run, out = ci_runs["no_dedup_junk"]
    final = json.loads((run / "final.json").read_text())
    bodies = [m["event_id"] for m in final["messages"].values()]
    # the attack happened: a junk message beside one copy of each event (4 for 3 tasks)
    assert "junk" in bodies and final["stream"]["messages"] > 3, out
    assert len(set(bodies)) == len(bodies), "a copy was published: the attack did not happen"
    fired = _result(run, "scenario-fired")
    assert fired["verdict"] == "unknown", out
    assert "did not observe a republished event" in fired["summary"]
    assert code == 2, out  # unknown, never valid
    # the control: the same solution without the trick is caught, the scenario confirmed
    code, run, out = ci_runs["no_dedup"]
    assert code == 1, out
    assert _result(run, "double-apply")["verdict"] == "invalid"
    confirmed = _result(run, "scenario-fired")
    assert confirmed["verdict"] == "valid" and "is in the stream 2 times" in confirmed["summary"]


def test_a_call_outside_the_labs_scope_is_refused_and_makes_the_run_invalid(
    ci_runs: dict[str, Any],
) -> None:
    code, run, out = ci_runs["etcd_forbidden"]
    probes = _probes(run)
    assert len(probes) == 3, out  # one per api: every call refused on every node
    for p in probes:
        assert all(v.startswith("refused") for v in p["data"]["etcd"].values()), p
        assert "PERMISSION_DENIED" in p["data"]["etcd"]["auth-enable"]
    r = _result(run, "etcd-scope")
    assert r["verdict"] == "invalid" and code == 1, out
    assert "refused Auth/AuthEnable" in r["summary"]
    named = {(a["method"], a["node"]) for a in r["anomalies"]}
    assert {m for m, _ in named} >= {"Auth/AuthEnable", "KV/Compact", "KV/Put", "KV/Range"}
    # chaos was not locked out: its final reads and the record are whole, the rest valid
    assert _result(run, "exactly-once")["verdict"] == "valid"
    assert _result(run, "complete-record")["verdict"] == "valid"


@pytest.mark.slow
def test_a_consumer_made_again_with_a_long_ack_wait_is_denied_and_the_bug_caught(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    runs = _runs(SLOW, tmp_path_factory.mktemp("redteam-broker-slow"))
    code, run, out = runs["consumer_rewrite"]
    # a worker held by the trigger while its attack waited may not have written its probe yet
    probes = _probes(run)
    assert probes, out
    for p in probes:
        assert all(v.startswith("refused") for v in p["data"]["consumer"].values()), p
    assert _result(run, "broker-config")["verdict"] == "valid"
    final = json.loads((run / "final.json").read_text())
    consumer = final["broker_config"]["final"]["streams"]["TASKS"]["consumers"]["workers"]
    assert consumer["config"]["ack_wait"] == 2_000_000_000
    assert code == 1 and _result(run, "double-apply")["verdict"] == "invalid", out
    control_code, control, control_out = runs["check-then-act"]
    assert control_code == 1 and _result(control, "double-apply")["verdict"] == "invalid", (
        control_out
    )
