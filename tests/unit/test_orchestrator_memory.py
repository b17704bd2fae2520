"""The real orchestrator, end to end, on a FakeCluster and an in-memory lab3-shaped system.

Deploy, client ops, the workload's own pause plus a scheduled kill, heal, recovery, final reads,
check, store and report — everything ``chaos run`` does, minus Docker. A planted double apply (a
worker that does not deduplicate) must be found, with its evidence; the same run with dedup must be
valid. This tests chaos's machinery, never lab3 itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.checkers.completeness import check_stored_run
from chaos.checkers.verdict import Verdict
from chaos.cluster.fake import FakeBackend
from chaos.core.spec import TestSpec
from chaos.histories.store import load_run
from chaos.orchestrator.run import RunOutcome, run_test
from tests.fixtures.memory_lab3 import MemoryLab3

# the api of n3 after the client's creates (the last at 1.35 s): a kill and its restart,
# independent of which worker the workload's own pause finds busy (a kill racing that pause would
# make the test depend on load)
KILL = {"at": 2.0, "fault": "kill", "target": "api@n3", "duration": 0.3, "index": 0}


def _run(
    store: Path, *, dedup: bool, page: bool = True
) -> tuple[RunOutcome, FakeBackend, MemoryLab3]:
    backend = FakeBackend()
    # creates 0.15 s apart keep a worker busy until about 1.7 s: the pause, which looks for one
    # from 1 s on, always finds one, however fast the work went
    wl = MemoryLab3(dedup=dedup, work_seconds=0.4, create_every=0.15)
    spec = TestSpec(
        workload=wl.name,
        seed=7,
        nemesis=("pause",),
        schedule={"steps": [KILL], "triggers": []},
        # the ack wait 0.6 s over the work: a busy CPU's delay makes no redelivery but the pause's
        options={"ack_wait": 1.0},
        pause_duration=1.5,
        time_limit=5.0,
        recovery_timeout=10.0,
    )
    said: list[str] = []
    outcome = run_test(
        spec, backend=backend, store=store, progress=said.append, workload=wl, page=page
    )
    return outcome, backend, wl


def _nemesis_ops(run_dir: Path) -> list[tuple[str, str]]:
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return [(o["f"], o["phase"]) for o in ops if o.get("process") == "nemesis" and "phase" in o]


@pytest.mark.parametrize("dedup", [True, False], ids=["dedup", "planted-double-apply"])
def test_a_whole_run_on_the_fake_backend(tmp_path: Path, dedup: bool) -> None:
    outcome, backend, wl = _run(tmp_path / "store", dedup=dedup)
    run_dir = outcome.run_dir
    (cluster,) = backend.clusters

    # the run went through every phase and left nothing behind on its nodes
    assert not outcome.interrupted and outcome.error is None
    assert set(outcome.timings) >= {"bring_up", "workload", "recovery", "final_reads", "check"}
    assert cluster.started and cluster.torn_down
    assert all(p.state != "T" for p in cluster.procs.values()), "a paused process was left"
    assert cluster.pid("n3", "api") is not None, "the killed api was not restarted"
    assert [pid for node, name, pid in cluster.spawned if (node, name) == ("n3", "api")][1:], (
        "the kill's heal spawned it again"
    )
    ops = _nemesis_ops(run_dir)
    for fault in ("pause", "kill"):
        assert ops.count((fault, "start")) == 2, ops  # invoke and completion
        assert ops.count((f"heal-{fault}", "heal")) == 2, ops

    # the store holds everything a re-check and a re-render need
    for name in ("spec.json", "history.jsonl", "events.jsonl", "final.json", "results.json"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "report.html").stat().st_size > 0
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["workload"] == "memory-lab3" and spec["backend"] == "fake"
    assert spec["status"] == "done" and spec["verdict"] == outcome.verdict.value
    # the workload's options from its declarations (the one source), none of them a field of
    # the framework's spec
    assert spec["options"] == {"ack_wait": 1.0} and "ack_wait" not in spec

    results = {r.checker: r for r in outcome.results}
    final = json.loads((run_dir / "final.json").read_text())
    redelivered = [e for e in load_run(run_dir).events if e.kind == "delivery"]
    assert any(e.data.get("num_delivered", 1) > 1 for e in redelivered), "the pause caused none"
    if dedup:
        assert outcome.verdict is Verdict.VALID, [r.summary for r in outcome.results]
        assert final["counter"] == 10
        assert any(e.kind == "suppressed" for e in load_run(run_dir).events)
    else:
        assert outcome.verdict is Verdict.INVALID
        found = results["double-apply"]
        assert found.verdict is Verdict.INVALID
        twice = [a for a in found.anomalies if "revisions" in a]
        assert len(twice) == 1 and len(twice[0]["revisions"]) == 2
        task = twice[0]["task_id"]
        amount = wl.store.results[task]["amount"]
        assert final["counter"] == 10 + amount
        assert f"task {task}: counter incremented twice by its amount ({amount})" in found.summary
        assert "paused" in found.summary  # the evidence names the fault that led to it
        assert results["counter"].verdict is Verdict.INVALID

    # re-checked offline from the stored files alone: the same verdict
    again = check_stored_run(wl, load_run(run_dir))
    assert [r.verdict for r in again] == [r.verdict for r in outcome.results]


def test_mount_copies_are_absolute_even_in_a_relative_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `chaos run` with the default store ("store", relative): Docker takes a relative host path
    # for a named volume and refuses the node
    from chaos.orchestrator.run import copy_mounts

    (tmp_path / "sol").mkdir()
    (tmp_path / "sol" / "protocol.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    got = copy_mounts({"sol": "/opt/solution"}, Path("store/run/mounts"))
    (host,) = got
    assert Path(host).is_absolute() and (Path(host) / "protocol.py").read_text() == "x = 1\n"


def test_a_run_without_its_page_has_the_same_verdict_and_renders_later(tmp_path: Path) -> None:
    from chaos.report import render

    outcome, _, _ = _run(tmp_path / "store", dedup=False, page=False)
    run_dir = outcome.run_dir
    assert not (run_dir / "report.html").exists() and not (run_dir / "plots").exists()
    assert outcome.verdict is Verdict.INVALID  # the planted double apply, page or not
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["verdict"] == "invalid" and "report" not in spec["timings"]
    assert render(run_dir).stat().st_size > 0  # as `chaos report RUN` does
