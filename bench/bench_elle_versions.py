"""What rw-register's version-order assumptions cost; prints the figures in docs/benchmarks.md
(## Elle: version-order assumptions).

    python bench/bench_elle_versions.py                # 100k transactions
    python bench/bench_elle_versions.py --txns 20000   # a smaller run
    python bench/bench_elle_versions.py --against /work/main   # also main's default, same run

The history comes from a simulated linearizable register store: ``--procs`` processes (10), each
transaction of 1-4 micro-ops (half reads, half writes of a unique value) over 8 active keys (a
key retired after 32 writes), executed atomically at a random point between its invocation and
its completion, so it holds under every assumption; ``--planted`` (0.001) of the transactions
read each key's version before the current one (stale reads). Each configuration is checked in
process (the history read once), best of ``--repeat`` (3) runs of CPU time (the machine is
shared: wall time swings 2x), under strict-serializable.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEYS_ACTIVE = 8
MAX_WRITES_PER_KEY = 32


def generate(n: int, procs: int, seed: int, planted: float) -> list[dict[str, Any]]:
    """The ops of the history (see the module's docstring)."""
    rng = random.Random(seed)
    store: dict[int, int] = {}
    prev: dict[int, int] = {}  # each key's version before the current one
    writes: dict[int, int] = {}
    active = list(range(KEYS_ACTIVE))
    next_key, started = KEYS_ACTIVE, 0
    values = itertools.count(1)
    ops: list[dict[str, Any]] = []
    pending: dict[int, dict[str, Any]] = {}  # process -> {mops, done, snapshot}

    def emit(typ: str, p: int, mops: list[list[Any]]) -> None:
        i = len(ops)
        ops.append({"index": i, "time": i, "process": p, "type": typ, "f": "txn", "value": mops})

    while started < n or pending:
        p = rng.randrange(procs)
        txn = pending.get(p)
        if txn is None:
            if started >= n:
                continue
            started += 1
            keys = [rng.choice(active) for _ in range(rng.randint(1, 4))]
            mops = [["r", k, None] if rng.random() < 0.5 else ["w", k, next(values)] for k in keys]
            pending[p] = {"mops": mops, "done": None, "stale": rng.random() < planted}
            emit("invoke", p, mops)
        elif txn["done"] is None:
            seen = prev if txn["stale"] else store
            local: dict[int, Any] = {}
            done = []
            for f, k, v in txn["mops"]:
                if f == "r":
                    done.append(["r", k, local.get(k, seen.get(k))])
                else:
                    local[k] = v
                    done.append(["w", k, v])
            for k, v in local.items():
                if k in store:
                    prev[k] = store[k]
                store[k] = v
                writes[k] = writes.get(k, 0) + 1
                if writes[k] >= MAX_WRITES_PER_KEY and k in active:
                    active[active.index(k)] = next_key
                    next_key += 1
            txn["done"] = done
        else:
            emit("ok", p, txn["done"])
            del pending[p]
    return ops


CONFIGS = {  # what each figure assumes (the VersionOrder fields; --wfr-keys is wfr_keys, ...)
    "default": [],
    "wfr-keys": ["wfr_keys"],
    "sequential-keys": ["sequential_keys"],
    "linearizable-keys": ["linearizable_keys"],
    "all-three": ["wfr_keys", "sequential_keys", "linearizable_keys"],
}


def measure(path: Path, configs: list[str], repeat: int) -> dict[str, Any]:
    """In this process: each configuration's best time and verdict."""
    from chaos.checkers.elle import check_transactions, transactions
    from chaos.checkers.elle.loading import read_raw_ops

    txns, _ = transactions(read_raw_ops(path)[0])
    out: dict[str, Any] = {}
    for name in configs:
        kw: dict[str, Any] = {}
        if CONFIGS[name]:
            from chaos.checkers.elle.options import VersionOrder

            kw["order"] = VersionOrder(**dict.fromkeys(CONFIGS[name], True))
        best = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            r = check_transactions(txns, "rw-register", "strict-serializable", **kw)
            best = min(best, time.process_time() - t0)
        kinds = sorted({a["type"] for a in r.anomalies if a["forbidden"]})
        out[name] = {"s": round(best, 3), "verdict": r.verdict.value, "anomalies": kinds}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--planted", type=float, default=0.001)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", type=Path, help="a checkout whose default is measured too")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:  # a child: measure these configurations of this file with this checkout
        print(json.dumps(measure(Path(a.one[0]), a.one[1:], a.repeat)))
        return
    with tempfile.TemporaryDirectory() as d:
        for label, planted in (("valid", 0.0), ("planted", a.planted)):
            path = Path(d) / f"{label}.jsonl"
            ops = generate(a.txns, a.procs, a.seed, planted)
            path.write_text("".join(json.dumps(o) + "\n" for o in ops))
            print(f"{label}: {a.txns} transactions, {a.procs} processes")
            runs = [("this tree", ROOT, list(CONFIGS))]
            if a.against:
                runs.insert(0, (str(a.against), a.against, ["default"]))
            for who, tree, configs in runs:
                argv = [sys.executable, __file__, "--repeat", str(a.repeat), "--one", str(path)]
                got = subprocess.run(
                    [*argv, *configs],
                    capture_output=True, text=True, check=True, cwd=tree,
                    env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                )  # fmt: skip
                for name, fig in json.loads(got.stdout).items():
                    print(
                        f"  {who:>12} {name:<20} {fig['s']:7.3f} s  {fig['verdict']:<8} "
                        f"{' '.join(fig['anomalies'])}"
                    )


if __name__ == "__main__":
    main()
