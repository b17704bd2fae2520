"""`chaos grade` benchmarks; prints the figures recorded in docs/benchmarks.md (## Grading).

    python bench/bench_grade.py overhead          # Dask's cost per run vs a plain loop (in memory)
    python bench/bench_grade.py throughput        # lab3 runs/hour at 1, 2, 3 concurrent runs (Docker)
    python bench/bench_grade.py all
    python bench/bench_grade.py matrix --parallel 1,2 --both   # lab3's default matrix (Docker)

matrix: lab3's default matrix (chaos/workloads/lab3/grade.yaml) over its shipped solutions as
control rows, graded as `chaos grade` grades them (session.grade, a local cluster of P slots):
runs/hour at each --parallel; --both runs it cold (CHAOS_GRADE_WARM=0: a `chaos run` subprocess
a run) then warm (a fork of the warm process a run) and compares every run's status.

overhead: N runs of the in-memory lab3 (tests/fixtures/grade_cli.py; each a real `chaos run`
subprocess on the fake backend) one after another, first by calling the task function in a plain
loop, then as Dask tasks on the local cluster `chaos grade` makes with one slot. The difference per
run is what Dask adds (scheduling, the result's round trip, the zipped folder).

throughput: a small lab3 matrix (the on-delivery trigger and a pause, short time limits) on the
reference solution, K runs at each concurrency; runs/hour is K / wall time. Per-run footprint: the
`chaos run` process's CPU time (its rusage), the run's containers' CPU time and peak memory (their
cgroups, read while they live).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)  # the in-memory runs start `python -m tests.fixtures.grade_cli` from here

from chaos.grade import dispatch  # noqa: E402
from chaos.grade.task import RunJob, run_one  # noqa: E402

MEMORY = (sys.executable, "-m", "tests.fixtures.grade_cli")
MEMORY_OPTS = (
    "--backend",
    "fake",
    "-o",
    "ack_wait=0.7",
    "--time-limit",
    "2",
    "--recovery-timeout",
    "10",
)
LAB3_CONFIGS = {
    "on-delivery": (
        "--trigger",
        "pause worker on delivery",
        "--time-limit",
        "10",
        "--recovery-timeout",
        "20",
    ),
    "pause": ("--nemesis", "pause", "--time-limit", "10", "--recovery-timeout", "20"),
}


def _jobs(
    lab: str, configs: dict[str, tuple[str, ...]], n: int, chaos: tuple[str, ...] | None
) -> list[RunJob]:
    names = list(configs)
    return [
        RunJob(student="bench", config=names[i % len(names)], repeat=i, seed=1000 + i, lab=lab,
               solution="reference", options=configs[names[i % len(names)]], timeout=300, chaos=chaos)
        for i in range(n)
    ]  # fmt: skip


def overhead(n: int = 8) -> None:
    jobs = _jobs("memory-lab3", {"quiet": MEMORY_OPTS}, n, MEMORY)
    t0 = time.monotonic()
    loop = [run_one(j) for j in jobs]
    t_loop = time.monotonic() - t0
    assert all(f.result.status == "valid" for f in loop), [f.result for f in loop]
    got = []
    t0 = time.monotonic()
    with dispatch.connect(None, 1) as client:
        t_up = time.monotonic() - t0
        t1 = time.monotonic()
        dispatch.run_all(client, jobs, lambda j, f, got=got: got.append(f))
        t_runs = time.monotonic() - t1
    assert len(got) == n
    size = statistics.mean(len(f.archive) for f in loop)
    # outside each run's own time (measured inside the task): what the loop or Dask adds per run.
    # On a loaded machine the runs' own times vary by seconds between the two phases; this
    # difference does not depend on them.
    loop_out = t_loop / n - statistics.mean(f.result.seconds for f in loop)
    dask_out = t_runs / n - statistics.mean(f.result.seconds for f in got)
    print(f"in-memory lab3, {n} runs, one at a time")
    print(
        f"  plain loop      {t_loop:6.1f} s  {t_loop / n:5.2f} s/run, {loop_out * 1000:4.0f} ms/run outside the runs"
    )
    print(
        f"  Dask (1 slot)   {t_runs:6.1f} s  {t_runs / n:5.2f} s/run, {dask_out * 1000:4.0f} ms/run outside the runs"
        f" (+ {t_up:.2f} s to start the local cluster)"
    )
    print(
        f"  Dask overhead   {(dask_out - loop_out) * 1000:+5.0f} ms/run; zipped run folder {size / 1024:.0f} KB"
    )


def _container_sampler(
    marker: str, stop: threading.Event, peaks: dict[str, int], cpu: dict[str, float]
) -> None:
    """Peak memory and last CPU total of every chaos container whose live folder has ``marker``
    in its path (this benchmark's runs only), from the Docker API's stats."""
    import docker

    client = docker.from_env().api
    while not stop.is_set():
        try:  # a container may go between the listing and its stats: skip it this round
            listed = client.containers(filters={"label": "chaos.project=chaos"})
        except Exception:
            listed = []
        for c in listed:
            if marker not in (c.get("Labels") or {}).get("chaos.live", ""):
                continue
            name = c["Names"][0]
            try:
                s = client.stats(c["Id"], stream=False)
            except Exception:
                continue
            mem = int(s.get("memory_stats", {}).get("usage", 0))
            peaks[name] = max(peaks.get(name, 0), mem)
            cpu[name] = s.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0) / 1e9
        stop.wait(1.0)


def throughput(levels: tuple[int, ...] = (1, 2, 3), per_level: int = 3) -> None:
    marker = f"chaos-bench-grade-{os.getpid()}"
    tmp = Path(tempfile.gettempdir()) / marker
    tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)  # each run's store (and so its containers' label) names it
    tempfile.tempdir = None
    print(f"lab3 reference, configurations {', '.join(LAB3_CONFIGS)}")
    for p in levels:
        n = max(per_level, p * 2)
        jobs = _jobs("lab3", LAB3_CONFIGS, n, None)
        peaks: dict[str, int] = {}
        cpu: dict[str, float] = {}
        stop = threading.Event()
        sampler = threading.Thread(
            target=_container_sampler, args=(marker, stop, peaks, cpu), daemon=True
        )
        sampler.start()
        got = []
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        with dispatch.connect(None, p) as client:
            dispatch.run_all(client, jobs, lambda j, f, got=got: got.append(f))
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        stop.set()
        sampler.join(5)
        statuses = sorted(
            {getattr(f, "result", f).status if hasattr(f, "result") else repr(f) for f in got}
        )
        per_run = statistics.mean(f.result.seconds for f in got if hasattr(f, "result"))
        orch_cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / n
        node_cpu = sum(cpu.values()) / n
        node_mem = sum(peaks.values()) / max(1, len(peaks)) * 3 / 2**20
        print(
            f"  {p} concurrent: {n} runs in {wall:5.0f} s = {n / wall * 3600:5.0f} runs/hour; "
            f"{per_run:4.0f} s per run; statuses {statuses}; per run: chaos run {orch_cpu:4.1f} s CPU, "
            f"nodes {node_cpu:4.1f} s CPU, ~{node_mem:4.0f} MB peak (3 nodes)"
        )


def lab3_matrix(
    parallel: int,
    cold: bool,
    repeats: int = 1,
    seed: int = 1,
    controls: tuple[str, ...] | None = None,
) -> dict[str, str]:
    """lab3's default matrix over its shipped solutions (the control rows, no student), as
    ``chaos grade`` runs it on a local cluster of ``parallel`` slots: runs/hour and every run's
    status (returned by row/config/repeat, to compare two modes' verdicts)."""
    from chaos.grade import matrix as matrices
    from chaos.grade.session import GradeRequest, grade
    from chaos.workloads.lab3.workload import Lab3

    os.environ["CHAOS_GRADE_WARM"] = "0" if cold else "1"
    work = Path(tempfile.mkdtemp(prefix=f"chaos-bench-matrix-p{parallel}-"))
    (work / "subs").mkdir()
    req = GradeRequest(
        lab="lab3",
        submissions=work / "subs",
        matrix=matrices.load(Lab3.grade_matrix),
        repeats=repeats,
        seed=seed,
        out=work / "out",
        controls=controls,
    )
    load0 = os.getloadavg()
    t0 = time.monotonic()
    got = grade(req, controls=Lab3.grade_controls, parallel=parallel)
    wall = time.monotonic() - t0
    load1 = os.getloadavg()
    statuses: dict[str, str] = {}
    for line in (req.out / "runs.jsonl").read_text().splitlines():
        if line.strip():
            import json

            d = json.loads(line)
            statuses[f"{d['student']}/{d['config']}/{d['repeat']}"] = d["status"]
    counts: dict[str, int] = {}
    for v in statuses.values():
        counts[v] = counts.get(v, 0) + 1
    mode = "cold (a subprocess a run)" if cold else "warm (a fork a run)"
    print(
        f"lab3 default matrix x {len(controls or Lab3.grade_controls)} shipped solutions, {mode}, "
        f"--parallel {parallel}: {got.ran} runs in {wall:.0f} s = {got.ran / wall * 3600:.0f} "
        f"runs/hour; statuses {counts}; load {load0[0]:.1f} before, {load1[0]:.1f} after "
        f"(1-min avg); out {req.out}"
    )
    rows = {r.name: r for r in got.table.rows}
    for name, row in rows.items():
        cells = " ".join(
            f"{c}={row.cells[c].tally.runs - row.cells[c].tally.passes}/{row.cells[c].tally.runs}"
            for c in row.cells
        )
        print(f"  {name}: failed/runs {cells}")
    return statuses


def _matrix_main(argv: list[str]) -> None:
    """bench_grade.py matrix [--parallel 1,2] [--cold|--both] [--repeats N] [--seed S]"""
    import argparse

    ap = argparse.ArgumentParser(prog="bench_grade.py matrix")
    ap.add_argument("--parallel", default="1,2")
    ap.add_argument("--cold", action="store_true", help="only the subprocess a run")
    ap.add_argument("--both", action="store_true", help="cold then warm at each level")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--controls", help="comma-separated shipped solutions (default: all)")
    args = ap.parse_args(argv)
    controls = tuple(args.controls.split(",")) if args.controls else None
    for p in [int(x) for x in args.parallel.split(",")]:
        modes = [True, False] if args.both else [args.cold]
        seen = [lab3_matrix(p, cold, args.repeats, args.seed, controls) for cold in modes]
        if len(seen) == 2:
            same = [k for k in seen[0] if seen[0][k] == seen[1].get(k)]
            print(f"  cold and warm: the same status in {len(same)} of {len(seen[0])} runs")
            for k in sorted(set(seen[0]) - set(same)):
                print(f"    {k}: cold {seen[0][k]}, warm {seen[1].get(k)}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what == "matrix":
        _matrix_main(sys.argv[2:])
        sys.exit(0)
    if what in ("overhead", "all"):
        overhead()
    if what in ("throughput", "all"):
        throughput()
