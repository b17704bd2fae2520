"""Where one graded lab3 run spends its wall and CPU time, by phase and by process.

    python bench/bench_phases.py [--runs N] [--cold] [--config NAME]
    python bench/bench_phases.py --creates ROUNDS    # 3 nodes created in a row, then at once

Each run is one job of lab3's default matrix (chaos/workloads/lab3/grade.yaml, configuration
``pause`` unless --config), on the reference solution, through the grader's own task function
(chaos.grade.task.run_one: a fork of the warm process, or with --cold a fresh ``chaos run``
subprocess), one at a time. Printed per run, then the mean over the runs:

- by phase, wall: the run's own stamps (spec.json's ``timings`` and ``steps``): start (the
  process, its imports, the options and the preflight, up to the run's clock), prepare (engine
  check, reaping leftovers, the image), containers (network, firewall, the nodes), etcd and the
  broker, the services, the workload with its fault, recovery, final reads, teardown, the checkers
  (with the lab report and history.edn), the report page, and the grader's own part (the rest of
  the task: unpacking, zipping the folder);
- by process, CPU: the grader (this process: the task around the run), the run's process (its
  rusage, children included), the Docker engine (dockerd, containerd and the run's shims: their
  /proc counters over the run — the engine serves other users' containers too, so on a shared
  machine this is an upper bound), and each node's processes (sampled from the nodes' cgroups every
  0.25 s while they live: a process that ends between two samples loses its last 0.25 s at most).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import json  # noqa: E402

from chaos.grade import matrix  # noqa: E402
from chaos.grade.task import RunJob, run_one, unpack  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
ENGINE = ("dockerd", "containerd")
KNOWN = (
    "etcd",
    "etcd_proxy --listen",
    "nats-server",
    "service api",
    "service relay",
    "service worker",
)
PHASES = (
    "start",
    "prepare",
    "containers",
    "etcd+broker",
    "services",
    "workload+fault",
    "recovery",
    "final reads",
    "teardown",
    "checkers",
    "report",
    "grader",
)


def _stat(pid: str) -> tuple[str, float] | None:
    """A process's name and its CPU seconds (user + system), from /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return name, (int(fields[11]) + int(fields[12])) / TICK


def _engine_cpu() -> float:
    total = 0.0
    for p in os.listdir("/proc"):
        if p.isdigit() and (got := _stat(p)) and got[0].startswith(ENGINE):
            total += got[1]
    return total


class NodeSampler(threading.Thread):
    """Every 0.25 s: the CPU of each process in each chaos node container of this benchmark,
    by node and process name (a process's last reading is kept once it is gone)."""

    def __init__(self, marker: str) -> None:
        super().__init__(daemon=True)
        self.marker, self.stop = marker, threading.Event()
        self.cpu: dict[tuple[str, str, str], float] = {}  # (node, name, pid) -> seconds

    def run(self) -> None:
        import docker

        api = docker.from_env().api
        while not self.stop.is_set():
            try:
                listed = api.containers(filters={"label": "chaos.project=chaos"})
            except Exception:
                listed = []
            for c in listed:
                if self.marker not in (c.get("Labels") or {}).get("chaos.live", ""):
                    continue
                node = c["Names"][0].rsplit("-", 1)[-1]
                for pid in _cgroup_pids(c["Id"]):
                    if got := _stat(pid):
                        self.cpu[(node, _name(pid, got[0]), pid)] = got[1]
            self.stop.wait(0.25)

    def by_process(self) -> dict[str, float]:
        """Each process name's CPU over the nodes ("nodes: etcd"), then each node's total."""
        names: dict[str, float] = {}
        nodes: dict[str, float] = {}
        for (node, name, _), sec in self.cpu.items():
            key = name if name in KNOWN else "other (sh, sleep, init, runc)"
            names[f"nodes: {key}"] = names.get(f"nodes: {key}", 0.0) + sec
            nodes[f"node {node} (all its processes)"] = (
                nodes.get(f"node {node} (all its processes)", 0.0) + sec
            )
        return dict(sorted(names.items())) | dict(sorted(nodes.items()))


def _cgroup_pids(cid: str) -> list[str]:
    for base in ("/sys/fs/cgroup/cpuacct/docker", "/sys/fs/cgroup/pids/docker"):
        try:
            return Path(f"{base}/{cid}/cgroup.procs").read_text().split()
        except OSError:
            continue
    return []


def _name(pid: str, comm: str) -> str:
    """A node process's name: a Python service by its module and role, else its command."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return comm
    words = [a.decode(errors="replace") for a in argv if a]
    if comm.startswith("python") and "-m" in words:
        i = words.index("-m")
        return " ".join(w.rsplit(".", 1)[-1] for w in words[i + 1 : i + 3])
    return comm


def phases(spec: dict[str, object], t0: float, task_wall: float) -> dict[str, float]:
    """The run's wall time by phase, from its spec.json (see the module's docstring); ``t0``: when
    the task started (CLOCK_MONOTONIC is the machine's, so the run's ``origin_mono`` compares)."""
    t = dict(spec.get("timings") or {})  # type: ignore[call-overload]
    steps = [(float(at), str(m)) for at, m in spec.get("steps") or []]  # type: ignore[attr-defined]

    def at(prefix: str) -> float:
        return next(s for s, m in steps if m.startswith(prefix))

    nodes, etcd, services = at("starting "), at("starting etcd"), at("starting api")
    brought = at("run ") + t["bring_up"]  # bring-up's end on the run's clock
    out = {
        "start": float(spec["origin_mono"]) - t0 - t["prepare"],  # type: ignore[arg-type]
        "prepare": t["prepare"],
        "containers": etcd - nodes,
        "etcd+broker": services - etcd,
        "services": brought - services,
        "workload+fault": t["workload"],
        "recovery": t.get("recovery", 0.0),
        "final reads": t.get("final_reads", 0.0),
        "teardown": t.get("teardown", 0.0),
        "checkers": t.get("results", t.get("check", 0.0)),
        "report": t.get("report", 0.0),
    }
    return out | {"exit+grader": task_wall - sum(out.values())}


def _forkserver_children_cpu() -> float:
    """CPU of the fork server's reaped children (its cutime + cstime): a warm run's, once it
    ended (0 before any warm run)."""
    from chaos.grade import warm

    pid = warm.server_pid()
    if pid is None:
        return 0.0
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[13]) + int(fields[14])) / TICK


def one(job: RunJob, marker: str) -> tuple[dict[str, float], dict[str, float], str]:
    sampler = NodeSampler(marker)
    sampler.start()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    engine0 = _engine_cpu()
    warm0 = _forkserver_children_cpu()
    t0 = time.monotonic()
    got = run_one(job)
    wall = time.monotonic() - t0
    engine = _engine_cpu() - engine0
    warm_cpu = _forkserver_children_cpu() - warm0
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.stop.set()
    sampler.join(5)
    here = Path(os.environ["TMPDIR"]) / f"unpacked-{job.seed}"
    unpack(got.archive, here)
    spec = json.loads((here / "spec.json").read_text())
    wall_by = phases(spec, t0, wall) | {"total": wall}
    cpu = {
        "grader (this process)": self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime,
        # a subprocess is this process's child; a warm run the fork server's
        "chaos run (its rusage)": warm_cpu
        + kids1.ru_utime
        + kids1.ru_stime
        - kids0.ru_utime
        - kids0.ru_stime,
        "docker engine (dockerd, containerd, shims)": engine,
    } | sampler.by_process()
    return wall_by, cpu, got.result.status


def creates(rounds: int) -> None:
    """Three nodes' creation (a log volume and a container each, as DockerCluster makes them)
    one after another, then side by side, alternating, ``rounds`` times each: what creating
    the nodes concurrently buys at this load. Everything made is removed."""
    from concurrent.futures import ThreadPoolExecutor

    import docker

    from chaos.cluster.docker.image import image_tag

    client = docker.from_env()
    label = {"chaos.bench": f"creates-{os.getpid()}"}

    def one(name: str) -> None:
        vol = client.volumes.create(name=f"{name}-logs", labels=label)
        client.containers.create(
            image_tag(), command=["sleep", "infinity"], name=name, labels=label, init=True,
            mounts=[docker.types.Mount("/var/log/chaos", vol.name, type="volume")],
        )  # fmt: skip

    took: dict[str, list[float]] = {"one after another": [], "side by side": []}
    try:
        for r in range(rounds):
            for how in took:
                names = [
                    f"chaos-bench-create-{os.getpid()}-{r}-{how.split()[0]}-{i}" for i in range(3)
                ]
                t0 = time.monotonic()
                if how == "side by side":
                    with ThreadPoolExecutor(3) as pool:
                        list(pool.map(one, names))
                else:
                    for n in names:
                        one(n)
                took[how].append(time.monotonic() - t0)
    finally:
        for c in client.containers.list(
            all=True, filters={"label": f"chaos.bench={label['chaos.bench']}"}
        ):
            c.remove(force=True)
        for v in client.volumes.list(filters={"label": f"chaos.bench={label['chaos.bench']}"}):
            v.remove(force=True)
    print(f"load {os.getloadavg()[0]:.1f}: creating 3 nodes, {rounds} rounds each, alternating")
    for how, xs in took.items():
        print(
            f"  {how:18} mean {statistics.mean(xs):.2f} s  (min {min(xs):.2f}, max {max(xs):.2f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--creates", type=int, metavar="ROUNDS", help="only time the nodes' creation")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--config", default="pause")
    ap.add_argument("--cold", action="store_true", help="chaos run in a subprocess (no fork)")
    args = ap.parse_args()
    if args.creates:
        creates(args.creates)
        return
    if args.cold:
        os.environ["CHAOS_GRADE_WARM"] = "0"
    marker = f"chaos-bench-phases-{os.getpid()}"
    tmp = Path("/tmp") / marker
    tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)  # each run's store, and so its containers' label, names it
    import tempfile

    tempfile.tempdir = None
    from chaos.workloads.lab3.workload import Lab3

    m = matrix.load(Lab3.grade_matrix)
    config = m.get(args.config)
    if not args.cold:  # its imports are paid once per worker, not per run: not in the figures
        from chaos.grade import warm

        t0 = time.monotonic()
        warm.start()
        print(f"fork server started in {time.monotonic() - t0:.1f} s")
    print(f"load before: {os.getloadavg()}; {'cold (subprocess)' if args.cold else 'warm (fork)'}")
    walls, cpus = [], []
    for i in range(args.runs):
        job = RunJob(student="bench", config=config.name, repeat=i, seed=7000 + i, lab="lab3",
                     solution="reference", options=tuple(config.argv()), timeout=300)  # fmt: skip
        wall_by, cpu, status = one(job, marker)
        walls.append(wall_by)
        cpus.append(cpu)
        print(f"run {i + 1}: {status}, {wall_by['total']:.1f} s wall")
    print(f"load after: {os.getloadavg()}")
    _table("wall by phase (s)", walls)
    _table("CPU by process (s)", cpus)


def _table(title: str, rows: list[dict[str, float]]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print(f"\n| {title} | mean | min | max |\n|---|---|---|---|")
    for k in keys:
        vals = [r.get(k, 0.0) for r in rows]
        print(f"| {k} | {statistics.mean(vals):.2f} | {min(vals):.2f} | {max(vals):.2f} |")
    if "total" not in keys:  # the node totals repeat the processes': count those once
        tot = [sum(v for k, v in r.items() if not k.startswith("node ")) for r in rows]
        print(f"| total | {statistics.mean(tot):.2f} | {min(tot):.2f} | {max(tot):.2f} |")


if __name__ == "__main__":
    main()
