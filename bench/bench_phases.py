"""Where one graded lab3 run spends its wall and CPU time, by phase and by process.

    python bench/bench_phases.py [--runs N] [--cold] [--config NAME]
    python bench/bench_phases.py --creates ROUNDS    # 3 nodes created in a row, then at once
    python bench/bench_phases.py --runs N --pieces ROUNDS  # and the Docker parts of a cluster

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

With ``--pieces ROUNDS``, after the runs: the Docker backend's own cluster (chaos's
DockerCluster, three nodes of the run's image, its live folder's mounts) started and torn down
ROUNDS times with nothing in it, each step of the two timed where chaos calls it (the network,
its host chain, the live folder's mounts, the nodes; then the containers' removal, the chain's,
the network's, the volumes', the mounts'), and each step's share of the mean run above: what
reusing a piece across the runs of one worker could save at most.
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


def _timing(
    timed: dict[str, float], owner: object, name: str, key: str
) -> tuple[object, str, object]:
    """Wrap ``owner.name`` so that each call adds its wall time to ``timed[key]``; returns what
    puts it back."""
    orig = getattr(owner, name)

    def timed_call(*args: object, **kwargs: object) -> object:
        t0 = time.monotonic()
        try:
            return orig(*args, **kwargs)
        finally:
            timed[key] = timed.get(key, 0.0) + time.monotonic() - t0

    setattr(owner, name, timed_call)
    return owner, name, orig


def _wrap_cluster(timed: dict[str, float]) -> list[tuple[object, str, object]]:
    """Time the steps of DockerCluster.start and .teardown where chaos calls them."""
    from chaos.cluster.docker import cluster as dc
    from chaos.cluster.docker import firewall, resources

    return [
        _timing(timed, owner, name, key)
        for owner, name, key in (
            (dc.DockerCluster, "start", "up: all"),
            (dc.DockerCluster, "_isolated_network", "up: network and its host chain"),
            (firewall, "install", "up: the host chain (iptables)"),
            (dc.DockerCluster, "_confine_live", "up: the live folder's tmpfs mounts"),
            (dc, "remove_run", "down: all Docker resources and the chain"),
            (resources, "remove_container", "down: the containers (one by one)"),
            (firewall, "remove_all", "down: the host chain (iptables)"),
            (resources, "_remove_network", "down: the network"),
            (dc, "unmount_keeping", "down: the live folder's mounts"),
        )
    ]


def _one_cluster(r: int) -> dict[str, float]:
    """One empty cluster up and down, by step (see :func:`pieces`)."""
    from chaos.cluster.docker.cluster import DockerCluster
    from chaos.cluster.docker.image import image_tag
    from chaos.orchestrator.run import make_live
    from chaos.workloads import solutions
    from chaos.workloads.lab3.workload import SOLUTIONS_DIR

    timed: dict[str, float] = {}
    live = Path(os.environ["TMPDIR"]) / f"pieces-{r}" / "live"
    make_live(live, 3)
    undo = _wrap_cluster(timed)
    try:
        cluster = DockerCluster(
            run_id=f"bench{os.getpid()}p{r}", nodes=3, image=image_tag(), src_dir=ROOT,
            live_dir=live, extra_mounts=solutions.mounts(SOLUTIONS_DIR, "reference"),
        )  # fmt: skip
        t0 = time.monotonic()
        with cluster:
            pass
        timed["up and down"] = time.monotonic() - t0
    finally:
        for owner, name, orig in reversed(undo):
            setattr(owner, name, orig)
    net = timed["up: network and its host chain"]
    timed["up: the network alone (create)"] = net - timed["up: the host chain (iptables)"]
    timed["up: the nodes (create, start, hide)"] = (
        timed["up: all"] - net - timed["up: the live folder's tmpfs mounts"]
    )
    parts = ("containers (one by one)", "host chain (iptables)", "network")
    timed["down: the volumes (and the lists)"] = timed[
        "down: all Docker resources and the chain"
    ] - sum(timed.get(f"down: the {k}", 0.0) for k in parts)
    return dict(sorted(timed.items()))


def pieces(rounds: int, run_wall: float | None) -> None:
    """The Docker backend's cluster, empty, started and torn down ``rounds`` times, by step;
    each step's share of ``run_wall`` (a run's mean wall, measured just before)."""
    load0 = os.getloadavg()[0]
    rows = [_one_cluster(r) for r in range(rounds)]
    print(
        f"\nload {load0:.1f} to {os.getloadavg()[0]:.1f}: an empty 3-node cluster up and down, "
        f"{rounds} rounds"
    )
    _table("Docker steps (s)", rows, share_of=run_wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--creates", type=int, metavar="ROUNDS", help="only time the nodes' creation")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--config", default="pause")
    ap.add_argument("--cold", action="store_true", help="chaos run in a subprocess (no fork)")
    ap.add_argument(
        "--pieces", type=int, default=0, metavar="ROUNDS",
        help="after the runs, time the Docker steps of an empty cluster, ROUNDS times",
    )  # fmt: skip
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
    run_wall = statistics.mean(w["total"] for w in walls) if walls else None
    if walls:
        _table("wall by phase (s)", walls, share_of=run_wall)
        _table("CPU by process (s)", cpus)
    if args.pieces:
        pieces(args.pieces, run_wall)


def _table(title: str, rows: list[dict[str, float]], share_of: float | None = None) -> None:
    """Mean, min and max of each key; with ``share_of``, the mean's share of it (a run's wall)."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    share = " share of a run |" if share_of else ""
    print(f"\n| {title} | mean | min | max |{share}\n|---|---|---|---|{'---|' * bool(share)}")
    for k in keys:
        vals = [r.get(k, 0.0) for r in rows]
        mean = statistics.mean(vals)
        pct = f" {100 * mean / share_of:.1f} % |" if share_of else ""
        print(f"| {k} | {mean:.2f} | {min(vals):.2f} | {max(vals):.2f} |{pct}")
    if "total" not in keys and "up and down" not in keys:  # the node totals repeat the processes'
        tot = [sum(v for k, v in r.items() if not k.startswith("node ")) for r in rows]
        print(f"| total | {statistics.mean(tot):.2f} | {min(tot):.2f} | {max(tot):.2f} |")


if __name__ == "__main__":
    main()
