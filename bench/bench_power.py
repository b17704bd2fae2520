"""Detection power: how often each configuration catches each shipped buggy solution, and how often
it raises a false alarm (invalid or unknown) on the reference.

    python3 bench/bench_power.py lab3|lab1 --seeds 5 [--pairs] [--parallel 2] [--out power.json]
        [--only reference,lost-update] [--configs stale-read]

Every run is a real ``chaos run`` (Docker, etcd, JetStream) in a subprocess, ``--parallel`` at a time; its
exit code is the verdict (0 valid, 1 invalid, 2 unknown). ``--pairs`` runs each buggy solution only
under the configuration that is meant to catch it (docs/labs/*.md, "What each configuration
catches") and the reference under every configuration; without it, every solution runs under every
configuration. The configurations are the lab's default grade matrix, read from
``chaos/workloads/<lab>/grade.yaml`` (what ``chaos grade`` runs, its defaults included). Prints one
line per cell as it goes and the table at the end.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# solution -> the configuration of the lab's default grade matrix (chaos/workloads/<lab>/grade.yaml)
# that is meant to catch it; the matrix itself is read from that file, so what is measured is
# exactly what `chaos grade` runs
CATCHES: dict[str, dict[str, str]] = {
    "lab3": {
        "check-then-act": "hold-after-check",
        "ack-before-commit": "double-kill",
        "second-txn-dedup": "kill-between-complete-txns",
        "non-idempotent-create": "lost-create-response",
        "outbox-second-txn": "kill-between-create-txns",
        "lost-update": "stale-read",
        "swallow-errors": "commit-error",
        "ack-on-redelivery": "double-kill",
    },
    "lab1": {
        "no-fencing": "holder-stopped-after-grant",
        "check-lease-before-write": "stopped-before-write-commit",
        "acquire-without-cas": "acquire-race",
        "off-by-one-night": "resume-at-expiry",
        "token-reuse": "one-replica",
        "renew-without-check": "renewal",
    },
}


def grade_matrix(lab: str) -> dict[str, list[str]]:
    """Configuration name -> its `chaos run` arguments (the matrix's defaults included)."""
    from chaos.grade import matrix

    m = matrix.load(REPO / "chaos" / "workloads" / lab / "grade.yaml")
    return {c.name: c.argv() for c in m.configs}


VERDICT = {0: "valid", 1: "invalid", 2: "unknown"}


def run_one(
    lab: str, solution: str, args: list[str], seed: int, store: Path
) -> tuple[str, float, list[str], list[str]]:
    """One run's verdict, its wall time, any two checkers of it that contradict each other, and
    why it is unknown (the unknown checkers' summaries) or why it did not finish."""
    argv = [sys.executable, "-m", "chaos.cli", "run", lab, "--solution", solution]
    argv += [*args, "--seed", str(seed), "-q", "--no-html", "--store", str(store)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    verdict = VERDICT.get(proc.returncode, f"exit {proc.returncode}")
    clash: list[str] = []
    why: list[str] = []
    stored = [ln.removeprefix("stored in ").strip() for ln in proc.stdout.splitlines()
              if ln.startswith("stored in ")]  # fmt: skip
    if stored:
        from chaos.checkers.verdict import CheckResult
        from chaos.workloads.lab1.checkers import contradictions as lab1_clash
        from chaos.workloads.lab3.checkers import contradictions as lab3_clash

        raw = json.loads((Path(stored[0]) / "results.json").read_text())["results"]
        results = [CheckResult.from_json(r) for r in raw]
        clash = {"lab1": lab1_clash, "lab3": lab3_clash}[lab](results)
        if verdict == "unknown":  # the folder goes below: keep why, or an unknown can't be read
            why = [f"{r.checker}: {r.summary}" for r in results if r.verdict.value == "unknown"]
    elif proc.returncode not in VERDICT:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-3:]
    for folder in stored:  # keep the store small over hundreds of runs; the verdict is read
        shutil.rmtree(folder, ignore_errors=True)
    return verdict, time.monotonic() - t0, clash, why


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lab", choices=sorted(CATCHES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--pairs", action="store_true")
    ap.add_argument("--only", default="", help="Comma-separated solutions (default: all).")
    ap.add_argument("--configs", default="", help="Comma-separated configurations (default: all).")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--parallel", type=int, default=1, help="Runs at once (default 1).")
    a = ap.parse_args()
    configs, catches = grade_matrix(a.lab), CATCHES[a.lab]
    if a.configs:
        wanted = a.configs.split(",")
        unknown = sorted(set(wanted) - set(configs))
        if unknown:
            ap.error(f"no configuration {', '.join(unknown)}; the matrix has {', '.join(configs)}")
        configs = {c: args for c, args in configs.items() if c in wanted}
    solutions = ["reference", *catches]
    if a.only:
        solutions = [s for s in solutions if s in a.only.split(",")]
    cells: list[tuple[str, str]] = []
    for sol in solutions:
        if a.pairs and sol != "reference":
            if catches[sol] in configs:
                cells.append((sol, catches[sol]))
        else:
            cells.extend((sol, c) for c in configs)
    table: dict[str, dict[str, list[str]]] = {}
    seconds: list[float] = []
    clashes: list[str] = []
    jobs = [(s, c, seed) for s, c in cells for seed in range(a.first_seed, a.first_seed + a.seeds)]
    with tempfile.TemporaryDirectory(prefix="chaos-power-") as tmp:

        def one(
            job: tuple[str, str, int],
        ) -> tuple[str, str, int, str, float, list[str], list[str]]:
            sol, cfg, seed = job
            return (sol, cfg, seed, *run_one(a.lab, sol, configs[cfg], seed, Path(tmp)))

        with ThreadPoolExecutor(max(1, a.parallel)) as pool:
            for sol, cfg, seed, verdict, took, clash, why in pool.map(one, jobs):
                seconds.append(took)
                clashes.extend(f"{sol} {cfg} seed {seed}: {c}" for c in clash)
                table.setdefault(sol, {}).setdefault(cfg, []).append(verdict)
                cmd = shlex.join(["chaos", "run", a.lab, "--solution", sol, *configs[cfg]])
                print(f"{verdict:<8} {took:5.1f}s  {cmd} --seed {seed}", flush=True)
                for line in why:
                    print(f"    {line}", flush=True)
    print(f"\n{len(seconds)} runs, {sum(seconds) / max(1, len(seconds)):.1f} s a run on average")
    print(f"checkers contradicting each other: {len(clashes)}", *clashes, sep="\n  ")
    print("\n| solution | configuration | invalid | unknown | valid |\n|---|---|---|---|---|")
    for sol, row in table.items():
        for cfg, verdicts in row.items():
            n = len(verdicts)
            inv, unk = verdicts.count("invalid"), verdicts.count("unknown")
            print(f"| {sol} | {cfg} | {inv}/{n} | {unk}/{n} | {verdicts.count('valid')}/{n} |")
    if a.out:
        a.out.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
