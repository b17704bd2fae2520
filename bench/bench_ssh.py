"""Bring-up over SSH beside Docker's, on the same machine, interleaved.

    python bench/bench_ssh.py [--runs 3] [--nodes nodes.yaml]

Without ``--nodes`` it starts a sandbox of its own (``chaos sandbox up 3``), timing that and the
first SSH run, which installs the node venv over SFTP; then it alternates ``chaos run lab3
--nemesis pause`` on ``--backend docker`` and ``--backend ssh`` and prints the medians of each
phase (``spec.json`` timings) and their ratio. The sandbox's nodes are containers on this host, so
the SSH figures are the protocol's cost (connections, channels, SFTP, the event collector), not a
network's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASES = ["prepare", "bring_up", "workload", "recovery", "teardown", "wall"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args], capture_output=True, text=True, cwd=REPO
    )


def run(store: Path, seed: int, backend: list[str]) -> dict[str, float]:
    t0 = time.monotonic()
    p = cli("run", "lab3", "--nemesis", "pause", "--seed", str(seed), "--store", str(store), "-q",
            *backend)  # fmt: skip
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"chaos run {backend} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    spec = json.loads(((store / "lab3" / "latest").resolve() / "spec.json").read_text())
    return {**spec["timings"], "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=Path, default=None)
    args = ap.parse_args()
    name = f"bench{os.getpid()}"
    own = args.nodes is None
    with tempfile.TemporaryDirectory(prefix="chaos-bench-ssh-") as tmp:
        store = Path(tmp)
        nodes = args.nodes or store / "nodes.yaml"
        try:
            if own:
                t0 = time.monotonic()
                p = cli("sandbox", "up", "3", "--name", name, "--out", str(nodes))
                if p.returncode != 0:
                    raise SystemExit(p.stdout + p.stderr)
                print(f"sandbox up 3: {time.monotonic() - t0:.2f} s")
                first = run(store, 1, ["--backend", "ssh", "--nodes-file", str(nodes)])
                print(
                    f"first ssh run (venv installed over SFTP): prepare {first['prepare']:.2f} s, "
                    f"wall {first['wall']:.2f} s"
                )
            got: dict[str, list[dict[str, float]]] = {"docker": [], "ssh": []}
            for i in range(args.runs):
                got["docker"].append(run(store, 7 + i, ["--backend", "docker"]))
                got["ssh"].append(
                    run(store, 7 + i, ["--backend", "ssh", "--nodes-file", str(nodes)])
                )
            print(f"| phase (median of {args.runs}, s) | docker | ssh | ssh / docker |")
            print("|---|---:|---:|---:|")
            for ph in PHASES:
                d = statistics.median(r.get(ph, 0.0) for r in got["docker"])
                s = statistics.median(r.get(ph, 0.0) for r in got["ssh"])
                print(f"| {ph} | {d:.2f} | {s:.2f} | {s / d if d else float('nan'):.2f}x |")
        finally:
            if own:
                cli("sandbox", "down", "--name", name)


if __name__ == "__main__":
    main()
