"""Bring-up with the author journal (each node's etcd proxy and its firewall rule) against the
same run without it, interleaved in one sitting; prints the figures in docs/benchmarks.md
(## The author journal).

    python bench/bench_proxy.py [--rounds 4] [--before COMMIT] [--labs lab3,lab1]

``--before`` is a commit without the proxy (default: the parent of the commit that added
chaos/node/etcd_proxy.py). Its ``chaos`` package is exported into a temporary folder (``git
archive``: the repository's worktrees are left alone); each round runs
``chaos run LAB --nemesis pause`` once from there and once from this checkout, alternately, so
that the load of a shared machine hits both alike. Bring-up is the run's own ``bring_up`` phase
(spec.json → timings): containers, etcd, the proxies and their rules, the broker, the services.
``systems`` is the part of it the proxy is in: from the run's "starting etcd" line to the line
that starts the lab's services (times the run prints), without the containers' creation, which
is the same work on both sides and the noisiest part on a shared machine (though not the same
code: the containers start side by side since 2e54aaa, which the code before does not). So the
summary also gives ``systems``' difference as a share of the bring-up without the proxies: the
most the proxies can add, whatever the rest of bring-up gained. Each run's line gives the load
average when it started; the summary, its range.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def default_before() -> str:
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "chaos/node/etcd_proxy.py")
    if not added:
        raise SystemExit("no commit adds chaos/node/etcd_proxy.py here; pass --before")
    return _git("rev-parse", f"{added.splitlines()[-1]}^")


def one(checkout: Path, lab: str, seed: int, store: Path) -> dict[str, float]:
    # the checkout's own chaos: `python -m` puts the working directory first, and no PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "run", lab, "--nemesis", "pause", "--seed", str(seed),
         "--store", str(store), "--no-html"],
        capture_output=True, text=True, cwd=checkout, env=env,
    )  # fmt: skip
    # a verdict that is not valid (1, 2: a pause that missed the holder on a loaded machine) still
    # timed its bring-up; anything else is a failure of the run itself
    if p.returncode not in (0, 1, 2):
        raise SystemExit(
            f"{checkout}: chaos run {lab} exited {p.returncode}:\n{p.stdout}{p.stderr}"
        )
    if p.returncode != 0:
        print(f"  ({checkout.name}: {lab} seed {seed}: verdict exit {p.returncode}, timed anyway)")
    spec = json.loads(((store / lab / "latest").resolve() / "spec.json").read_text())
    out = {k: float(v) for k, v in spec["timings"].items()}
    marks = {
        m.group(2): float(m.group(1))
        for m in re.finditer(r"\[\s*([\d.]+)s\] (starting \S+)", p.stdout + p.stderr)
    }
    services = next((v for k, v in marks.items() if k not in ("starting etcd", "starting 3")), None)
    if "starting etcd" in marks and services is not None:
        out["systems"] = services - marks["starting etcd"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--before", default=None, help="a commit without the proxy")
    ap.add_argument("--labs", default="lab3,lab1")
    args = ap.parse_args()
    before = args.before or default_before()
    labs = [x for x in args.labs.split(",") if x]
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        old.mkdir()
        archive = subprocess.run(["git", "archive", before, "chaos"], cwd=REPO,
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        rows: dict[tuple[str, str], list[dict[str, float]]] = {}
        loads: list[float] = []
        for r in range(args.rounds):
            for lab in labs:
                order = [("with", REPO), ("without", old)]
                if r % 2:
                    order.reverse()  # neither side always goes first
                for side, checkout in order:
                    loads.append(os.getloadavg()[0])
                    t = one(checkout, lab, 200 + r, Path(tmp) / side)
                    rows.setdefault((lab, side), []).append(t)
                    print(f"round {r + 1} {lab} {side:7} bring-up {t['bring_up']:.2f} s, "
                          f"systems {t.get('systems', float('nan')):.2f} s, "
                          f"load {loads[-1]:.1f}", flush=True)  # fmt: skip
    print(
        f"\nbring-up, median of {args.rounds} interleaved rounds (seconds); without = {before[:9]}; "
        f"load average (1 min) {min(loads):.1f}-{max(loads):.1f}, median {statistics.median(loads):.1f}"
    )
    for lab in labs:
        for phase in ("bring_up", "systems"):
            w = statistics.median(t.get(phase, float("nan")) for t in rows[(lab, "with")])
            wo = statistics.median(t.get(phase, float("nan")) for t in rows[(lab, "without")])
            # each round's own ratio too: its two runs saw about the same load
            paired = statistics.median(
                a.get(phase, float("nan")) / b.get(phase, float("nan"))
                for a, b in zip(rows[(lab, "with")], rows[(lab, "without")], strict=True)
            )
            print(f"  {lab} {phase:9}: with the proxy {w:.2f}, without {wo:.2f}, "
                  f"ratio {w / wo:.3f} (median of the rounds' ratios {paired:.3f})")  # fmt: skip
        # what the proxies can cost at most: the whole of `systems`' difference (the proxies, their
        # rules and everything else the deploy gained since), against the bring-up without them
        wo_up = statistics.median(t["bring_up"] for t in rows[(lab, "without")])
        extra = statistics.median(t.get("systems", float("nan")) for t in rows[(lab, "with")]) - (
            statistics.median(t.get("systems", float("nan")) for t in rows[(lab, "without")])
        )
        print(f"  {lab} systems' difference {extra:+.2f} s = {extra / wo_up:+.1%} of the bring-up "
              f"without the proxies")  # fmt: skip


if __name__ == "__main__":
    main()
