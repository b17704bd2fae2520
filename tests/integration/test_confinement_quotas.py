"""Quotas on everything the code under test can fill, attacked as a student would.

Red-team solutions (tests/fixtures/redteam/, and one of tests/fixtures/hostile/) run on real
clusters (side by side; the events flood, the longest, under ``-m slow``):

- ``fill``: every service process tries to write 2 GiB through every path of its node (each
  tmpfs, the read-only root, the folders it may not write, its stdout) and into the live folder;
- ``events``: every service process writes 1 GB of small, well-formed events;
- ``storm``: with a task in hand, a helper on each node forks until the kernel refuses, then tries
  threads, timers, files, sockets and 20 MB of argv;
- ``hostile/memory``: 4 GiB allocated in a node of 1 GiB;
- ``etcdfill``: 1 GiB of values written into etcd through its own client.

Each must end bounded: at most each quota lands (the helper's own report, and what the host holds
afterwards), the orchestrator's memory stays under 300 MB whatever the events, etcd and the broker
keep working through the storm, a run that went over a quota is ``unknown`` with the reason, and
nothing is left behind (containers, networks, volumes, host mounts).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest

from chaos.cluster.docker.quota import MOUNT_PREFIX, Quotas
from chaos.cluster.docker.reap import reap
from chaos.workloads.systems.etcd import QUOTA_BACKEND_BYTES
from tests.integration.conftest import REPO, chaos_bg, leftovers, run_dir_from
from tests.integration.nemesis_support import wait_until

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
HOSTILE = REPO / "tests" / "fixtures" / "hostile"
FAST = ["--seed", "5", "--recovery-timeout", "10", "--time-limit", "15", "-q", "--no-html"]
MiB = 1 << 20
RSS_BOUND = 300 * MiB
Q = Quotas()


def _size(text: str) -> int:
    assert text.endswith("m"), text
    return int(text[:-1]) * MiB


NODE_QUOTA = {path: _size(size) for path, size, _ in Q.node_paths} | {
    Q.logs[0]: _size(Q.logs[1]),
    "/dev/shm": _size(Q.shm),
}
LIVE_QUOTA = {name: _size(size) for name, size in Q.live_paths}


def _run(name: str, store: Path, *extra: str) -> tuple[str, int, Path, str, int, float]:
    """One ``chaos run`` under ``/usr/bin/time``, which gives the orchestrator's peak RSS."""
    solution = REDTEAM / name if (REDTEAM / name).is_dir() else HOSTILE / name
    t0 = time.monotonic()
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, sys.executable, "-m", "chaos.cli",
             "run", "lab3", "--solution", str(solution), *FAST, *extra, "--store", str(store)],
            capture_output=True, text=True, timeout=600, cwd=REPO,
        )  # fmt: skip
        peak_kb = int(Path(rss.name).read_text().split()[-1])
    out = p.stdout + p.stderr
    return name, p.returncode, run_dir_from(p), out, peak_kb * 1024, time.monotonic() - t0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path, str, int]]:
    store = tmp_path_factory.mktemp("quota-store")
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = list(pool.map(lambda n: _run(n, store), ["fill", "storm", "memory"]))
    out = {}
    for name, code, run, text, peak, took in done:
        # ended by its own limits, with room for an engine stalled by the other stream
        assert took < 400, f"{name} took {took:.0f} s"
        out[name] = (code, run, text, peak)
    return out


def _apparent(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if not p.is_symlink())


def _nothing_left(engine: docker.DockerClient, run: Path, *, finished: bool = True) -> None:
    spec = json.loads((run / "spec.json").read_text())
    assert spec["status"] == ("done" if finished else "running")
    rid = spec["run_id"]
    assert leftovers(engine, rid) == []
    assert engine.volumes.list(filters={"label": f"chaos.run={rid}"}) == []
    mounts = Path("/proc/self/mounts").read_text()
    assert str(run) not in mounts, "a tmpfs of the run is still mounted"
    assert not [ln for ln in mounts.splitlines() if ln.startswith(MOUNT_PREFIX) and str(run) in ln]


def test_writes_through_every_path_land_at_most_their_quota(
    runs: dict[str, tuple[int, Path, str, int]], engine: docker.DockerClient
) -> None:
    code, run, out, _ = runs["fill"]
    assert "the code under test wrote more than its quota to" in out, out
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    record = results["complete-record"]
    assert record["verdict"] == "unknown" and "wrote more than its quota" in record["summary"]
    # never valid: unknown, or invalid where the fill also broke the lab's own work (its services
    # share the full folders, so a task can be lost, and etcd's counter shows it)
    if any(r["verdict"] == "invalid" for r in results.values()):
        assert code == 1, out
    else:
        assert code == 2, out
    reports = []
    for p in (run / "live" / "claims").glob("redteam-fill-*.json"):
        text = p.read_text().strip()
        if text:  # a process that started after the claims folder was full could not report
            reports.append(json.loads(text))
    assert reports, "no process of the solution reported"
    landed: dict[tuple[str, str], int] = {}
    for r in reports:
        assert r["uid"] != 65534  # the service runs as its run's and node's own uid
        for path, (n, why) in [(k, v) for k, v in r.items() if k not in ("node", "uid")]:
            landed[(r["node"], path)] = landed.get((r["node"], path), 0) + n
            if path in ("/", "/var/tmp", "/opt/solution", "/opt/chaos-src", "/etc", "/usr"):
                assert (n, why) == (0, "OSError:30"), (path, r)  # read-only root and mounts
            elif path in ("/root", "/var/log/chaos", "/run", "/data"):
                assert (n, why) == (0, "PermissionError:13"), (path, r)  # root's
            elif path == "stdout":
                assert n <= Q.file_bytes and why == "OSError:27", r  # EFBIG at the file limit
            else:
                assert why == "OSError:28", (path, r)  # ENOSPC: the path's size
    for (node, path), n in landed.items():
        if path in NODE_QUOTA:
            assert n <= NODE_QUOTA[path], (node, path, n)
        elif path == "/chaos/events":
            assert n <= LIVE_QUOTA["events"], (node, n)
    # what the host holds afterwards: the live folder's two sized folders and the logs (each file
    # cut at its limit), nothing else of size
    for name, quota in LIVE_QUOTA.items():
        assert _apparent(run / "live" / name) <= quota
    logs = _apparent(run / "logs")
    assert logs <= 9 * Q.file_bytes + 3 * MiB, logs
    total = _apparent(run)
    assert total <= sum(LIVE_QUOTA.values()) + 9 * Q.file_bytes + 8 * MiB, total
    _nothing_left(engine, run)


@pytest.mark.slow  # about 45 s: 100,000 events read, merged and checked
def test_a_flood_of_events_leaves_chaos_memory_bounded_and_the_run_unknown(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    _, code, run, out, peak, _ = _run("events", tmp_path)
    assert code == 2, out
    assert "the code under test wrote more than 100000 events" in out, out
    assert peak <= RSS_BOUND, f"the orchestrator's peak RSS was {peak / MiB:.0f} MiB"
    with (run / "events.jsonl").open("rb") as fh:
        lines = sum(1 for _ in fh)
    assert lines <= 100_001  # a header and at most the cap
    spec = json.loads((run / "spec.json").read_text())
    assert any("100000 events" in w for w in spec.get("warnings", []))
    final = json.loads((run / "final.json").read_text())
    assert any("100000 events" in b for b in final["over_quota"])
    _nothing_left(engine, run)


def test_a_fork_storm_leaves_etcd_and_the_broker_working(
    runs: dict[str, tuple[int, Path, str, int]], engine: docker.DockerClient
) -> None:
    code, run, out, _ = runs["storm"]
    reports = [json.loads(p.read_text()) for p in (run / "live" / "claims").glob("redteam-st*")]
    assert reports, f"the storm never ran:\n{out}"
    for r in reports:
        forks, why = r["forks"]
        assert why == "BlockingIOError:11" and forks < Q.tasks, r  # the uid's task limit
        assert r["threads"][0] < Q.tasks and r["timers"][0] < Q.tasks, r
        assert r["files"][0] < Q.open_files and r["sockets"][0] < Q.open_files, r
        assert r["argv"][0] == 0, r  # 20 MB of argv: refused
    # etcd and the broker answered the final reads after the storm
    final = json.loads((run / "final.json").read_text())
    assert "error" not in final, final.get("error")
    assert final["record"]["error"] is None and final["stream"]["last_seq"] >= 1
    for log in [*run.glob("logs/*/etcd.log"), *run.glob("logs/*/nats.log")]:
        assert "failed to create new OS thread" not in log.read_text(errors="replace")
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    if any(r["verdict"] == "invalid" for r in results.values()):
        assert code == 1, out  # the lab's work failed: never valid
    else:
        assert code in (0, 2), out
    _nothing_left(engine, run)


def test_a_memory_hog_is_ended_inside_the_services_group_and_etcd_keeps_working(
    runs: dict[str, tuple[int, Path, str, int]], engine: docker.DockerClient
) -> None:
    # tests/fixtures/hostile/memory: complete() allocates 4 GiB in a node of 1 GiB
    code, run, out, _ = runs["memory"]
    assert code == 1 and "never completed" in out, out  # the work failed: invalid
    final = json.loads((run / "final.json").read_text())
    # the kernel ended the worker inside the services' group (768 MiB): etcd and the broker,
    # outside it, answered the final reads
    assert "error" not in final, final.get("error")
    assert final["record"]["error"] is None and final["stream"]["last_seq"] >= 1
    _nothing_left(engine, run)


def test_filling_etcd_meets_etcds_own_quota_and_the_run_is_not_valid(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    # tests/fixtures/redteam/etcdfill: 1 MiB values into etcd until it refuses (1 GiB attempted)
    # load mode for 12 s: the fill, through its node's proxy, reached the quota 5 s after the
    # services started on a quiet machine; it keeps etcd's writes failing, so recovery never
    # comes and is not waited for long (the last --recovery-timeout is the one taken)
    _, code, run, out, _, _ = _run("etcdfill", tmp_path, "--tasks", "100", "--rate", "8",
                                   "--time-limit", "20", "--recovery-timeout", "4")  # fmt: skip
    (report,) = [json.loads(p.read_text()) for p in (run / "live" / "claims").glob("redteam-*")]
    assert "database space exceeded" in report["why"], report
    assert report["written_mib"] <= QUOTA_BACKEND_BYTES >> 20, report
    final = json.loads((run / "final.json").read_text())
    assert "error" not in final and "over_quota" not in final, final  # etcd up, /data not full
    # the verdict follows the lab's own work: not valid when the full etcd refused the lab's
    # writes or chaos's end marker; valid only when every accepted task completed before the fill
    # reached the quota (through the node's proxy the fill takes longer than the lab's work)
    assert code in (0, 1, 2), out
    if code == 0:
        assert "accepted tasks completed" in out and "exactly-once" in out, out
    _nothing_left(engine, run)


def _our_mounts(store: Path) -> list[str]:
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [ln for ln in lines if ln.startswith(MOUNT_PREFIX) and str(store) in ln]


@pytest.mark.exclusive
def test_a_killed_orchestrators_mounts_and_volumes_are_reaped_keeping_the_claims(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    store = tmp_path / "store"
    proc = chaos_bg(
        "run", "lab3", "--seed", "7", "--nemesis", "pause", "--time-limit", "120", store=store
    )
    try:
        # events/ then claims/: wait for both
        mounted = wait_until(lambda: len(_our_mounts(store)) == 2, 60.0, 0.2)
        assert mounted, f"the live folder's two tmpfs mounts: {_our_mounts(store)}"
        run = next((store / "lab3").glob("2*/spec.json")).parent
        rid = json.loads((run / "spec.json").read_text())["run_id"]
        assert wait_until(lambda: engine.volumes.list(filters={"label": f"chaos.run={rid}"}), 60)
        (run / "live" / "claims" / "kept.json").write_text("{}")  # as a service would
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert str(run) in Path("/proc/self/mounts").read_text(), "a SIGKILL leaves the mounts"
    done = reap(engine, run_id=rid)
    assert any(d.startswith("unmounted ") for d in done), done
    assert any(d.startswith("removed volume ") for d in done), done
    _nothing_left(engine, run, finished=False)
    assert (run / "live" / "claims" / "kept.json").read_text() == "{}"  # kept beneath
