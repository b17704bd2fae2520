"""Heal, always: SIGINT in the middle of a pause and a partition; SIGKILL of the orchestrator.

Both runs hold a pause (n2's worker) and a partition (n3 cut off) at the same time when the signal
arrives, from a scripted schedule, so one run covers both faults.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import docker
import pytest

from chaos.cluster.docker.reap import heal_in_place, reap
from chaos.cluster.net import chain_name
from tests.integration.conftest import chaos, chaos_bg, leftovers, read_jsonl, wait_for_line
from tests.integration.nemesis_support import pids_in_container, proc_state, wait_until

pytestmark = pytest.mark.integration

SCHEDULE = """\
schedule:
  - at 0.2s pause worker@n2 for 120s
  - at 0.2s partition n3 for 120s
"""


def _start(
    tmp_path: Path, schedule: str = SCHEDULE, faults: tuple[str, ...] = ("pause", "partition")
) -> tuple[subprocess.Popen[str], Path, dict]:
    sched = tmp_path / "hold.yaml"
    sched.write_text(schedule)
    store = tmp_path / "store"  # a store of its own: the only run in it is this one
    proc = chaos_bg(
        "run", "lab3", "--schedule", str(sched), "--seed", "11", "--time-limit", "120",
        store=store,
    )  # fmt: skip
    run = wait_until(lambda: next((store / "lab3").glob("2*/history.jsonl"), None), 60.0, 0.2)
    assert run is not None, f"the run never started:\n{_output(proc)}"
    run = run.parent
    for fault in faults:
        done = wait_for_line(
            run / "history.jsonl",
            lambda o, f=fault: (
                o.get("fault") == f
                and o.get("phase") == "start"
                and isinstance(o.get("value"), dict)
                and ("pid" in o["value"] or "grudge" in o["value"] or "freezer" in o["value"])
            ),
            60.0,
        )
        assert done is not None, f"{fault} never took effect:\n{_output(proc)}"
    spec = json.loads((run / "spec.json").read_text())
    return proc, run, spec


def _output(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        return "(still running)"
    return proc.stdout.read() if proc.stdout else ""


def _worker_host_pid(init: int) -> int:
    for p in pids_in_container(init):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "lab3.service worker" in cmd:
            return p
    raise AssertionError("no worker process in the container")


def _chain_rules(init: int, chain: str) -> list[str]:
    p = subprocess.run(
        ["nsenter", "-t", str(init), "-n", "iptables", "-S", chain], capture_output=True, text=True
    )
    return [ln for ln in p.stdout.splitlines() if ln.startswith("-A")]


def test_sigint_during_pause_and_partition_heals_and_keeps_the_history(
    tmp_path: Path, store: Path, engine: docker.DockerClient
) -> None:
    proc, run, spec = _start(tmp_path)
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    history = read_jsonl(run / "history.jsonl")
    nem = [o for o in history if o.get("process") == "nemesis"]
    starts = {o["fault_id"] for o in nem if o["phase"] == "start"}
    heals = [o for o in nem if o["phase"] == "heal" and o["type"] == "info"]
    assert starts and starts <= {o["fault_id"] for o in heals}, "every fault has its heal"
    healed = {o["fault"]: o["value"] for o in heals}  # the last heal op of a fault: its completion
    resumed = healed["pause"]
    assert resumed["signal"] == "SIGCONT" and resumed["state"] != "T"
    assert all(v in ("open", "refused") for v in healed["partition"]["verified"].values())
    assert leftovers(engine, spec["run_id"]) == []
    assert json.loads((run / "spec.json").read_text())["status"] == "interrupted"
    again = chaos("check", str(run), store=None)
    assert again.returncode in (0, 1, 2), again.stdout + again.stderr


@pytest.mark.exclusive
def test_sigkill_leaves_faults_that_cleanup_heals_then_a_run_starts_cleanly(
    tmp_path: Path, store: Path, engine: docker.DockerClient
) -> None:
    proc, run, spec = _start(tmp_path)
    rid = spec["run_id"]
    # the orchestrator is alive: reaping must not touch its run
    reap(engine)
    assert len([n for n in leftovers(engine, rid) if n.startswith("chaos-")]) == 4
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    containers = {
        c.labels["chaos.node"]: c
        for c in engine.containers.list(filters={"label": [f"chaos.run={rid}"]})
    }
    assert sorted(containers) == ["n1", "n2", "n3"], "a SIGKILLed run leaves its nodes"
    init = {n: int(c.attrs["State"]["Pid"]) for n, c in containers.items()}
    worker = _worker_host_pid(init["n2"])
    chain = chain_name(rid)
    assert proc_state(worker) == "T", "the pause outlives the orchestrator"
    assert len(_chain_rules(init["n3"], chain)) == 2, "and so does the partition"

    done = heal_in_place(engine, rid, spec.get("live") or str(run / "live"))
    assert wait_until(lambda: proc_state(worker) in ("S", "R"), 10.0), done
    assert all(_chain_rules(init[n], chain) == [] for n in init), done
    assert f"healed: resumed stopped worker (pid {worker}) on n2" in done, done
    assert any(f"flushed {chain}" in d for d in done), done

    p = chaos("cleanup", store=None)
    assert p.returncode == 0, p.stdout + p.stderr
    # every `chaos run` on this engine reaps dead runs as it starts, so another one may take some of
    # this run's containers while cleanup runs: cleanup acted on the run, and nothing of it is left
    assert f"chaos-{rid}" in p.stdout, p.stdout
    assert leftovers(engine, rid) == []

    later = chaos("run", "lab3", "--seed", "12", "--recovery-timeout", "20", store=store)
    assert later.returncode == 0, later.stdout + later.stderr


@pytest.mark.exclusive
def test_sigkill_mid_freeze_then_the_reaper_thaws_the_node_first(
    tmp_path: Path, store: Path, engine: docker.DockerClient
) -> None:
    proc, run, spec = _start(
        tmp_path, "schedule:\n  - at 0.2s freeze n3 for 120s\n", faults=("freeze",)
    )
    rid = spec["run_id"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    (n3,) = engine.containers.list(filters={"label": [f"chaos.run={rid}", "chaos.node=n3"]})
    assert n3.status == "paused", "a freeze outlives the orchestrator"

    done = heal_in_place(engine, rid, spec.get("live") or str(run / "live"))
    n3.reload()
    assert n3.status == "running", done
    assert done[0] == "healed: thawed n3", done
    assert heal_in_place(engine, rid, spec.get("live") or str(run / "live")) == [], "done once"
    p = chaos("cleanup", store=None)
    assert p.returncode == 0, p.stdout + p.stderr
    assert leftovers(engine, rid) == []
