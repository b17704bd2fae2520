"""Verdicts rest on what chaos observed itself, not on what the code under test says.

``second-txn-dedup`` applies the effect first and writes its dedup record in a second transaction:
a redelivered event is applied twice, yet the second apply *reports* "duplicate", and the per-task
result keeps a running total, so the service's events show one commit per task and its results add
up to the inflated counter. Judged on that narration, the run looked valid. Judged on etcd's own
record (two revisions changing the counter for one task) and the client's history (the amounts it
asked for), it is invalid in every seed, and the evidence names both revisions.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.conftest import chaos, read_jsonl, run_dir_from

pytestmark = pytest.mark.integration

PHRASE = "pause worker on delivery until commit"
# every seed must be invalid: three in CI (one round of three runs), ten with -m slow
SEEDS = [
    pytest.param(range(1, 4), id="3-seeds"),
    pytest.param(range(1, 11), id="10-seeds", marks=pytest.mark.slow),
]


def _run(seed: int, store: Path) -> tuple[int, Path, str]:
    p = chaos(
        "run", "lab3", "--solution", "second-txn-dedup", "--trigger", PHRASE, "--seed", str(seed),
        "-o", "ack_wait=1", "-o", "work_seconds=0.1", "--fault-duration", "10",
        "--recovery-timeout", "30", "-q",
        store=store,
    )  # fmt: skip
    return p.returncode, run_dir_from(p), p.stdout + p.stderr


@pytest.mark.parametrize("seeds", SEEDS)
def test_an_apply_reported_as_a_duplicate_is_caught_by_etcds_record(
    seeds: range, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(lambda s: _run(s, store), seeds))
    for code, run, out in outcomes:
        assert code == 1, out
        results = {
            r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]
        }
        final = json.loads((run / "final.json").read_text())
        double, counter = results["double-apply"], results["counter"]
        assert double["verdict"] == "invalid", out
        (twice,) = [a for a in double["anomalies"] if "revisions" in a]
        task, revs = twice["task_id"], twice["revisions"]
        assert len(revs) == 2 and revs[0] < revs[1]
        # the evidence is etcd's: both revisions wrote the counter together with that task's result
        txns = {t["revision"]: t for t in final["record"]["txns"]}
        for rev in revs:
            assert "/lab3/counter" in txns[rev]["puts"]
            assert f"/lab3/results/{task}" in txns[rev]["puts"]
        assert (
            f"task {task}: counter incremented twice by its amount ({twice['amount']})"
            in double["summary"]
        )
        assert f"revisions {revs[0]}, {revs[1]}" in double["summary"]
        # the service's narration disagreed: one commit and one "suppressed"
        events = [e for e in read_jsonl(run / "events.jsonl") if e.get("task_id") == task]
        assert sum(e["kind"] == "commit" for e in events) == 1
        assert any(e["kind"] == "suppressed" for e in events)
        assert "the service reported 1 commit(s)" in double["summary"]
        # and the counter is judged against the client's own amounts, not the solution's results
        assert final["counter"] == 10 + twice["amount"]
        assert sum(r["amount"] for r in final["results"].values()) == final["counter"]
        assert counter["verdict"] == "invalid"
        assert "accepted tasks add up to 10" in counter["summary"]
