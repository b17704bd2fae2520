"""Broker points decided by the nodes' NATS proxies (chaos.node.nats_proxy), on real Docker, real
etcd and a real JetStream broker: ``kill worker after ack of tasks``.

Why after, not before: ack-before-commit ACKs a delivery and only then commits it. Killed with its
ACK held *before* the broker got it, the ACK is dropped, the broker delivers the task again and the
next worker completes it — the bug hides. Killed once the broker has taken the ACK (the proxy
forwarded it and holds the broker's answer), the worker never commits and the broker never
delivers the task again: a task lost, which the reference (commit, then ACK) cannot lose.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chaos.histories.store import StoredRun, load_run
from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

POINT = "kill worker after ack of tasks"
# a steady trickle of tasks: the point is armed while tasks still come, however slow bring-up is
LOAD = ("-o", "ack_wait=1", "-o", "work_seconds=0.2", "--rate", "1", "--time-limit", "20",
        "--recovery-timeout", "15", "--seed", "4", "-q")  # fmt: skip


def _run(store: Path, solution: str) -> tuple[int, dict[str, Any], StoredRun]:
    p = chaos("run", "lab3", "--solution", solution, "--trigger", POINT, *LOAD,
              store=store, timeout=500)  # fmt: skip
    run = load_run(run_dir_from(p))
    results = {
        r["checker"]: r for r in json.loads((run.path / "results.json").read_text())["results"]
    }
    return p.returncode, results, run


def _fired(run: StoredRun) -> dict[str, Any]:
    # a fault's start is two ops (its intent, then what was done), each with the trigger
    fired = {
        o.extra["fault_id"]: o.extra["trigger"]
        for o in run.history
        if isinstance(o.extra.get("trigger"), dict) and o.extra.get("phase") == "start"
    }
    assert len(fired) == 1, fired
    trigger: dict[str, Any] = next(iter(fired.values()))
    return trigger


def test_a_kill_after_the_broker_took_the_ack_loses_ack_before_commits_task(
    tmp_path: Path,
) -> None:
    with ThreadPoolExecutor(2) as pool:
        ref = pool.submit(_run, tmp_path / "ref", "reference")
        bug = pool.submit(_run, tmp_path / "bug", "ack-before-commit")
        (ref_code, ref_results, ref_run), (code, results, run) = ref.result(), bug.result()

    for r in (ref_run, run):
        trigger = _fired(r)
        # the proxy decided it and the host found the sender by its socket: the worker's ACK
        assert (trigger["decided_by"], trigger["op"], trigger["component"]) == (
            "nats-proxy", "ack", "worker",
        ), trigger  # fmt: skip
        assert trigger["keys"] and trigger["keys"][0].startswith("$JS.ACK.TASKS.workers."), trigger
    assert ref_code == 0, ref_results  # commit, then ACK: a kill after the ACK loses nothing

    assert code == 1, results
    lost = results["lost-tasks"]
    assert lost["verdict"] == "invalid", lost
    assert "never completed" in lost["summary"], lost
    # the evidence, all chaos's own: the ACK the proxy held names the stream sequence it ends
    # ($JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>...); chaos's read of the stream says
    # which task that message carries; it is the lost one, still pending in etcd, and the broker
    # owes no delivery of it (it took the ACK: nothing pending, nothing unACKed)
    trigger = _fired(run)
    seq = trigger["keys"][0].split(".")[5]
    final = run.final or {}
    held_task = final["messages"][seq]["task_id"]
    lost_ids = {a["task_id"] for a in lost["anomalies"]}
    assert lost_ids == {held_task}, (lost_ids, held_task, trigger)
    assert final["tasks"][held_task] == "pending", final["tasks"]
    consumer = final["consumer"]
    assert consumer["num_ack_pending"] == 0 and consumer["num_pending"] == 0, consumer
    assert not [e for e in run.events if e.kind == "commit" and e.task_id == held_task]
    # and the proxy journaled its hold: held, then dropped with the killed worker
    journal = final["broker_journal"]
    assert journal["source"] == "nats-proxy" and not journal["unread"], journal
    lines = [e for e in journal["entries"] if e.get("op") == "ack"]
    assert [(e["node"], e["outcome"]) for e in lines] == [
        (trigger["node"], "held"), (trigger["node"], "dropped"),
    ], lines  # fmt: skip


def test_a_service_cannot_reach_the_broker_around_its_proxy_nor_see_its_points(
    tmp_path: Path,
) -> None:
    """``direct_broker`` tries 127.0.0.1:4222 and every address of its /24 on 4222 from each api,
    and the NATS proxy's journal, control folder and deliveries record; every attempt is refused, its own proxy
    answers, and the run (otherwise the reference) is valid."""
    p = chaos("run", "lab3", "--solution", str(REPO / "tests/fixtures/redteam/direct_broker"),
              "--seed", "3", "-q", store=tmp_path, timeout=400)  # fmt: skip
    run = run_dir_from(p)
    probes = [
        json.loads(line)
        for f in sorted((run / "live" / "events").glob("*-probe.jsonl"))
        for line in f.read_text().splitlines()
        if line
    ]
    assert len(probes) == 3, p.stdout  # one per node's api
    for probe in probes:
        direct = probe["data"]["direct"]
        assert "127.0.0.1" in direct and len(direct) >= 4
        assert all(v.startswith("refused") for v in direct.values()), direct
        assert probe["data"]["proxy"] == "answered"
        files = probe["data"]["files"]
        assert len(files) == 5 and all(v.startswith("refused") for v in files.values()), files
    assert p.returncode == 0, p.stdout
