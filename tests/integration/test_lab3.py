"""lab3 end to end on real containers, etcd and JetStream (issue 2's acceptance)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from chaos.histories.store import load_run
from tests.integration.conftest import (
    REPO,
    chaos,
    chaos_bg,
    interrupt,
    leftovers,
    read_jsonl,
    run_dir_from,
    wait_for_line,
)

pytestmark = pytest.mark.integration


def _pause_interval(history: list[dict]) -> tuple[float, float, dict]:
    start = [o for o in history if o.get("fault") == "pause" and o.get("phase") == "start"]
    heal = [o for o in history if o.get("fault") == "pause" and o.get("phase") == "heal"]
    assert len(start) == 2 and len(heal) == 2, "one pause: an info invoke and completion each"
    return start[-1]["time"], heal[-1]["time"], start[-1]["value"]


def test_pause_reference_is_valid_with_redelivery_during_the_pause(
    store: Path, engine: docker.DockerClient
) -> None:
    # the README's main job, its page included (the other integration runs skip the page)
    p = chaos("run", "lab3", "--nemesis", "pause", "--seed", "7", store=store, page=True)
    assert p.returncode == 0, p.stdout + p.stderr
    run = run_dir_from(p)
    results = json.loads((run / "results.json").read_text())
    assert results["verdict"] == "valid"
    page = (run / "report.html").read_text()
    assert "valid" in page and (run / "plots" / "latency-raw.png").stat().st_size > 0
    history = read_jsonl(run / "history.jsonl")
    t0, t1, target = _pause_interval(history)
    assert (
        target["process"] == "worker" and target["signal"] == "SIGSTOP" and target["state"] == "T"
    )
    events = read_jsonl(run / "events.jsonl")
    paused = [e for e in events if e["node"] == target["node"] and e["component"] == "worker"]
    # the paused worker was computing a delivery it had not committed
    held = [e for e in paused if e["kind"] == "compute" and e["time"] <= t0]
    assert held, "the pause must hit a worker holding an unacked delivery"
    event_id = held[-1]["event_id"]
    redelivered = [
        e for e in events
        if e["kind"] == "delivery" and e.get("event_id") == event_id
        and e["data"]["num_delivered"] > 1 and t0 < e["time"] < t1
    ]  # fmt: skip
    assert redelivered, "the broker must redeliver while the worker is stopped"
    assert redelivered[0]["node"] != target["node"] or redelivered[0]["pid"] != held[-1]["pid"]
    after = [e for e in paused if e.get("event_id") == event_id and e["time"] >= t1]
    assert not any(e["kind"] == "commit" for e in after), "the resumed worker must not commit again"
    assert any(e["kind"] == "suppressed" for e in after) or not any(
        e["kind"] in {"commit", "suppressed"} for e in after
    )
    final = json.loads((run / "final.json").read_text())
    assert final["counter"] == 10 and len(final["results"]) == 3
    assert final["recovered"] is True
    assert leftovers(engine, json.loads((run / "spec.json").read_text())["run_id"]) == []
    # the stored run re-checks offline to the same verdict
    again = chaos("check", str(run), store=None)
    assert again.returncode == 0, again.stdout + again.stderr


def test_three_seed_scenarios_and_the_lab_report(store: Path, tmp_path: Path) -> None:
    report = tmp_path / "lab03.json"
    p = chaos(
        "run",
        "lab3",
        "--scenarios",
        "all",
        "--seed",
        "3",
        "--lab-report-out",
        str(report),
        store=store,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(report.read_text())
    sc = data["scenarios"]
    assert set(sc) == {"relay-crash-before-publish", "lost-publish-ack", "worker-crash-before-ack"}
    for name, s in sc.items():
        assert s["verdict"] == "valid", name
        assert s["counter"] == 10 and s["results"] == 3 and s["tasks_completed"] == 3, name
    assert sc["lost-publish-ack"]["stream_count"] > 3
    assert sc["lost-publish-ack"]["suppressed"] >= 1
    assert sc["worker-crash-before-ack"]["redelivery_count"] >= 1
    assert sc["worker-crash-before-ack"]["suppressed"] >= 1
    # the host killed the relay before it published: its intent was pending in etcd and was
    # published after
    relay = load_run(Path(sc["relay-crash-before-publish"]["run"]))
    heal = [o for o in relay.history if o.extra.get("phase") == "heal"][-1]
    assert heal.value["at_fire"]["outbox_pending"] >= 1
    assert heal.value["killed_pid"] == heal.value["pid"] != heal.value["restarted_pid"]
    died = heal.value["exit_seen_at"]
    later = [e for e in relay.events if e.task_id == heal.value["task_id"] and e.time > died]
    assert any(e.kind in {"publish", "publish-retry"} for e in later)
    assert any(e.kind == "commit" for e in later)
    # the excerpt of one task's events is in the report
    ex = sc["worker-crash-before-ack"]["excerpt"]
    steps = [s["step"] for s in ex["events"]]
    for step in ("publish", "delivery", "commit", "redelivery", "suppressed", "ack"):
        assert step in steps, (step, steps)


def test_check_then_act_under_pause_is_invalid_with_double_apply_evidence(store: Path) -> None:
    p = chaos("run", "lab3", "--nemesis", "pause", "--solution", "check-then-act", "--seed", "11",
              store=store)  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    run = run_dir_from(p)
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    da = results["double-apply"]
    assert da["verdict"] == "invalid"
    task = next(a for a in da["anomalies"] if "commits" in a)
    assert len(task["commits"]) == 2
    assert "counter incremented twice" in da["summary"] and "paused" in da["summary"]
    steps = [s["step"] for s in task["chain"]]
    assert steps.count("commit") == 2 and "redelivery" in steps
    assert any(a.get("kind") == "counter-excess" for a in da["anomalies"])


def test_ack_before_commit_with_worker_crash_loses_a_named_task(store: Path) -> None:
    # a lost task is never completed: the run reads the final state once the system is at rest
    # (nothing in the broker, nothing written for the grace), not after the 40 s recovery bound
    p = chaos("run", "lab3", "--nemesis", "worker-crash-before-ack", "--solution",
              "ack-before-commit", "--seed", "5", store=store)  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    assert "the system is at rest with its work unfinished" in p.stdout + p.stderr
    run = run_dir_from(p)
    final = json.loads((run / "final.json").read_text())
    assert final["recovered"] is False and final["at_rest"] >= 3.5, final  # the grace: 0.5 + 3
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    lost = results["lost-tasks"]
    assert lost["verdict"] == "invalid"
    a = lost["anomalies"][0]
    assert a["task_id"] in {"t1", "t2", "t3"} and a["task_id"] in lost["summary"]
    steps = [s["step"] for s in a["chain"]]
    assert "ack" in steps and "commit" not in steps and "crash" in steps


def test_a_second_firing_is_not_awaited_once_the_first_lost_the_task(store: Path) -> None:
    # the grade's double-kill configuration: ack-before-commit's first kill loses the one task, so
    # nothing can reach the point again; the trigger stops waiting once the system is at rest,
    # not after the 30 s time limit
    p = chaos("run", "lab3", "--solution", "ack-before-commit", "-o", "set_size=1",
              "-o", "ack_wait=2", "--trigger",
              "kill worker before txn 1 of complete for 0.2s 2 times", "--seed", "3",
              store=store)  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "the system came to rest after 1 firing(s)" in out, out
    run = run_dir_from(p)
    spec = json.loads((run / "spec.json").read_text())
    # well before the time limit (a loaded machine slows the rest too, hence not a tighter bound)
    assert spec["timings"]["workload"] < spec["time_limit"] * 0.75, spec["timings"]
    kills = [
        o for o in read_jsonl(run / "history.jsonl")
        if o.get("f") == "kill" and o.get("phase") == "start" and o.get("trigger")
    ]  # fmt: skip
    assert [o["trigger"]["firing"] for o in kills] == [1, 1], kills  # one kill: invoke, completion
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    lost = results["lost-tasks"]
    assert lost["verdict"] == "invalid" and "t1" in lost["summary"]
    assert "ACKed by" in lost["summary"] and "no commit followed" in lost["summary"]


def test_starter_solution_names_the_missing_function_without_traceback(store: Path) -> None:
    p = chaos("run", "lab3", "--solution", "starter", store=store)
    assert p.returncode == 3
    assert "create" in p.stderr and "complete" in p.stderr and "TODO" in p.stderr
    assert "Traceback" not in p.stdout + p.stderr


def test_sigint_during_a_pause_heals_removes_everything_and_keeps_the_history(
    store: Path, engine: docker.DockerClient
) -> None:
    proc = chaos_bg("run", "lab3", "--nemesis", "pause", "--pause-duration", "60", "--seed", "2",
                    store=store)  # fmt: skip
    try:
        deadline_path = store / "lab3" / "latest" / "history.jsonl"
        hist = wait_for_line(
            deadline_path,
            lambda o: (
                o.get("fault") == "pause"
                and o.get("phase") == "start"
                and isinstance(o.get("value"), dict)
                and o["value"].get("pid")
            ),
            timeout=90,
        )
        assert hist is not None, "the pause never started"
        interrupt(proc)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    run = (store / "lab3" / "latest").resolve()
    spec = json.loads((run / "spec.json").read_text())
    assert spec["status"] == "interrupted"
    assert leftovers(engine, spec["run_id"]) == []
    history = read_jsonl(run / "history.jsonl")
    heals = [o for o in history if o.get("fault") == "pause" and o.get("phase") == "heal"]
    assert heals and heals[-1]["value"]["signal"] == "SIGCONT"
    assert "Traceback" not in out
    check = subprocess.run([sys.executable, "-m", "chaos.cli", "check", str(run)],
                           capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert check.returncode in (0, 1, 2), check.stdout + check.stderr
    assert "Traceback" not in check.stdout + check.stderr
