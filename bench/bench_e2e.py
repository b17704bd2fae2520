"""Wall time of `chaos run lab3 --nemesis pause`, by phase, beside a raw etcd cluster in Docker.

    python bench/bench_e2e.py [--runs 3] [--compare OTHER_CHECKOUT]

The raw baseline does only what any harness must: a bridge network, three containers of the same
node image running a 3-member etcd cluster, wait until every member answers, remove everything.
Both are measured in the same session, so their ratio is what to compare across machines.

``--compare DIR`` also runs ``chaos run`` from another checkout of chaos (``git worktree add
/tmp/before <commit>``), interleaved with this one, and prints both medians and their ratio: how
a change is shown to cost no speed, side by side in one sitting.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import etcd3

from chaos.cluster.docker.image import build_image

REPO = Path(__file__).resolve().parents[1]


def chaos_run(store: Path, seed: int, checkout: Path = REPO) -> dict[str, float]:
    """One run; ``python -m`` from ``checkout`` imports that checkout's chaos (cwd comes first)."""
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "run", "lab3", "--nemesis", "pause", "--seed",
         str(seed), "--store", str(store), "-q"],
        capture_output=True, text=True, cwd=checkout,
    )  # fmt: skip
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"chaos run failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    spec = json.loads(((store / "lab3" / "latest").resolve() / "spec.json").read_text())
    return {**spec["timings"], "wall": wall}


def raw_etcd(client: docker.DockerClient, image: str, i: int) -> dict[str, float]:
    # labelled as the bench's own, not chaos's: a concurrent `chaos run` reaps chaos-labelled
    # resources whose owner is not a live orchestrator, which these are not
    t0 = time.monotonic()
    net = client.networks.create(
        f"bench-raw-{i}",
        driver="bridge",
        labels={"chaos.bench": f"raw{i}"},
    )
    names = ["n1", "n2", "n3"]
    cs = [
        client.containers.create(image, ["sleep", "infinity"], name=f"bench-raw-{i}-{n}",
                                 hostname=n, network=net.name, detach=True, init=True,
                                 labels={"chaos.bench": f"raw{i}"})
        for n in names
    ]  # fmt: skip
    for c in cs:
        c.start()
    ips = {}
    for n, c in zip(names, cs, strict=True):
        c.reload()
        ips[n] = c.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"]
    initial = ",".join(f"{n}=http://{ips[n]}:2380" for n in names)
    for n, c in zip(names, cs, strict=True):
        c.exec_run(
            ["etcd", "--name", n, "--data-dir", "/data/etcd",
             "--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", f"http://{ips[n]}:2379",
             "--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", f"http://{ips[n]}:2380",
             "--initial-cluster", initial, "--initial-cluster-state", "new",
             "--heartbeat-interval", "100", "--election-timeout", "1000"],
            detach=True,
        )  # fmt: skip
    for n in names:
        while True:
            try:
                c3 = etcd3.client(ips[n], 2379, timeout=1)
                c3.get("/x")
                c3.close()
                break
            except Exception:
                time.sleep(0.05)
    up = time.monotonic() - t0
    t1 = time.monotonic()
    for c in cs:
        c.remove(force=True)
    net.remove()
    return {"bring_up": up, "teardown": time.monotonic() - t1, "wall": time.monotonic() - t0}


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r.get(key, 0.0) for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compare", type=Path, default=None, help="another checkout of chaos")
    args = ap.parse_args()
    client = docker.from_env()
    image = build_image(client, lambda m: None)
    raws, runs, others = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):  # interleaved, so drift on a noisy machine hits both alike
            raws.append(raw_etcd(client, image, i))
            runs.append(chaos_run(Path(tmp) / "this", seed=100 + i))
            if args.compare is not None:
                others.append(chaos_run(Path(tmp) / "other", seed=100 + i, checkout=args.compare))
    phases = [
        "prepare",
        "bring_up",
        "workload",
        "recovery",
        "final_reads",
        "teardown",
        "check",
        "report",
    ]
    print(f"chaos run lab3 --nemesis pause, median of {args.runs} (seconds)")
    if others:
        print(
            f"  {'phase':12} {'this':>7} {'other':>7} {'this/other':>11}   (other: {args.compare})"
        )
    for p in [*phases, "wall"]:
        line = f"  {p:12} {med(runs, p):7.2f}"
        if others:
            ratio = med(runs, p) / med(others, p) if med(others, p) else float("nan")
            line += f" {med(others, p):7.2f} {ratio:11.3f}"
        print(line + ("   (process start to exit)" if p == "wall" else ""))
    print(f"raw 3-member etcd cluster in docker, median of {args.runs} (seconds)")
    for p in ["bring_up", "teardown", "wall"]:
        print(f"  {p:12} {med(raws, p):7.2f}")
    print(
        f"ratio chaos bring-up (etcd + broker + 9 services) / raw etcd bring-up: "
        f"{med(runs, 'bring_up') / med(raws, 'bring_up'):.2f}"
    )
    print(
        f"ratio chaos teardown / raw teardown: {med(runs, 'teardown') / med(raws, 'teardown'):.2f}"
    )


if __name__ == "__main__":
    main()
