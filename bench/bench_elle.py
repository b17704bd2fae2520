"""Elle-style checking at scale; prints the figures recorded in docs/benchmarks.md (## Elle).

    python bench/bench_elle.py                 # 100k list-append txns: valid and planted, JSONL and EDN
    python bench/bench_elle.py --txns 20000    # a smaller run
    python bench/bench_elle.py --generate-only # just write the histories
    python bench/bench_elle.py --read-only     # the readers' speed, in process

The histories come from a simulated serializable store: ``--procs`` client processes (10), each
transaction of 1-4 micro-ops (half reads, half appends) over a pool of 8 active keys, a key
retired after 32 appends (Jepsen's list-append generator does the same, so that lists stay
short), executed atomically at a random point between its invocation and its completion; 5%
fail (not applied), 2% end ``info`` (applied or not). The planted version runs 0.1% of the
transactions non-atomically: their reads see the store as it was when they were invoked, their
appends land when they execute (stale reads, lost updates, G-single and G2 cycles).

Each history is written to /tmp/chaos-bench (or $CHAOS_BENCH_DIR) as chaos JSONL, as Jepsen EDN
op maps and as Jepsen 0.3's EDN (each op a ``#jepsen.history.Op`` record), then checked by the real command (``chaos check FILE --model list-append``, interpreter
start included) in a child process whose peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(os.environ.get("CHAOS_BENCH_DIR", "/tmp/chaos-bench"))
KEYS_ACTIVE = 8
MAX_APPENDS_PER_KEY = 32


def generate(n: int, procs: int, seed: int, planted: float) -> list[dict[str, Any]]:
    """The ops of a list-append history (see the module's docstring)."""
    rng = random.Random(seed)
    store: dict[int, list[int]] = {}
    appends: dict[int, int] = {}
    active = list(range(KEYS_ACTIVE))
    next_key = KEYS_ACTIVE
    elem = 0
    ops: list[dict[str, Any]] = []
    pending: dict[int, dict[str, Any]] = {}
    process = list(range(procs))
    next_process = procs
    left = n
    t = 0.0

    def emit(typ: str, p: int, value: Any) -> None:
        ops.append(
            {
                "index": len(ops),
                "time": round(t, 6),
                "process": p,
                "type": typ,
                "f": "txn",
                "value": value,
            }
        )

    while left or pending:
        t += rng.random() * 1e-3
        idle = [s for s in range(procs) if s not in pending] if left else []
        busy = list(pending)
        if idle and (not busy or rng.random() < 0.4):
            s = rng.choice(idle)
            left -= 1
            mops: list[list[Any]] = []
            for _ in range(rng.randint(1, 4)):
                k = rng.choice(active)
                if rng.random() < 0.5:
                    mops.append(["r", k, None])
                else:
                    elem += 1
                    mops.append(["append", k, elem])
                    appends[k] = appends.get(k, 0) + 1
                    if appends[k] >= MAX_APPENDS_PER_KEY:
                        active[active.index(k)] = next_key
                        next_key += 1
            r = rng.random()
            outcome = "fail" if r < 0.05 else "info" if r < 0.07 else "ok"
            x = {"mops": mops, "outcome": outcome, "done": False, "result": None}
            if rng.random() < planted:
                x["snapshot"] = {k: list(v) for k, v in store.items() if k in active}
            pending[s] = x
            emit("invoke", process[s], mops)
            continue
        s = rng.choice(busy)
        x = pending[s]
        if not x["done"]:
            x["done"] = True
            if x["outcome"] == "fail" or (x["outcome"] == "info" and rng.random() < 0.5):
                continue
            snap = x.get("snapshot")
            result = []
            for f, k, v in x["mops"]:
                if f == "r":
                    seen = snap.get(k, []) if snap is not None else store.get(k, [])
                    result.append(["r", k, list(seen)])
                else:
                    store.setdefault(k, []).append(v)
                    if snap is not None:
                        snap.setdefault(k, []).append(v)
                    result.append([f, k, v])
            x["result"] = result
            continue
        del pending[s]
        if x["outcome"] == "ok":
            emit("ok", process[s], x["result"])
        elif x["outcome"] == "fail":
            emit("fail", process[s], x["mops"])
        else:
            emit("info", process[s], x["mops"])
            process[s] = next_process
            next_process += 1
    return ops


def _edn(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, list):
        return "[" + " ".join(_edn(x) for x in v) + "]"
    if isinstance(v, str):
        return ":" + v
    return str(v)


def write(ops: list[dict[str, Any]], stem: Path) -> tuple[Path, Path, Path]:
    jsonl = stem.with_suffix(".jsonl")
    with open(jsonl, "w") as fh:
        fh.write(json.dumps({"format": "chaos.history", "version": 1}) + "\n")
        for op in ops:
            fh.write(json.dumps(op, separators=(",", ":")) + "\n")
    edn = stem.with_suffix(".edn")
    with open(edn, "w") as fh:
        for op in ops:
            fh.write(
                f"{{:type :{op['type']}, :f :txn, :value {_edn(op['value'])}, "
                f":time {int(op['time'] * 1e9)}, :process {op['process']}, "
                f":index {op['index']}}}\n"
            )
    records = stem.with_name(stem.name + "-records.edn")
    with open(records, "w") as fh:  # Jepsen 0.3's history.edn: each op an Op record
        for op in ops:
            fh.write(
                f"#jepsen.history.Op{{:index {op['index']}, :time {int(op['time'] * 1e9)}, "
                f":type :{op['type']}, :process {op['process']}, :f :txn, "
                f":value {_edn(op['value'])}}}\n"
            )
    return jsonl, edn, records


def check(path: Path, consistency: str) -> dict[str, Any]:
    """``chaos check`` on ``path`` in a child process: wall and CPU seconds (user + system:
    the figure that holds on a shared, loaded machine), peak RSS, exit code, result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "chaos.cli", "check", str(path), "--model", "list-append"]
    cmd += ["--consistency", consistency, "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    doc = json.loads(out.stdout) if out.stdout.strip().startswith("{") else {"err": out.stderr}
    res = doc.get("results", [{}])[0]
    return {
        "wall": wall,
        "cpu": cpu,
        "rss_mb": after.ru_maxrss / 1024,  # this interpreter runs one check: its own peak
        "rc": out.returncode,
        "summary": res.get("summary"),
        "stats": res.get("stats"),
        "err": doc.get("err"),
    }


def _one(path: str, consistency: str) -> None:
    print(json.dumps(check(Path(path), consistency)))


def keyword_keys(edn: Path) -> Path:
    """A copy of an EDN history keyed by keywords, as Elle's own histories are
    (``[:append :k5 3]``)."""
    import re

    out = edn.with_name(edn.stem + "-keywords.edn")
    text = edn.read_text()
    out.write_text(re.sub(r"\[:(append|r) (\d+)", r"[:\1 :k\2", text))
    return out


def read_speed(path: Path) -> str:
    """Reading ``path`` into raw ops in this process: best CPU seconds of three, MB/s."""
    import gc

    from chaos.checkers.elle.loading import read_raw_ops

    best = float("inf")
    gc.disable()  # as check_file has it
    for _ in range(3):
        t0 = time.process_time()
        read_raw_ops(path)
        best = min(best, time.process_time() - t0)
    gc.enable()
    return f"{path.name}: read in {best:.2f} s CPU ({path.stat().st_size / 1e6 / best:.1f} MB/s)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--consistency", default="strict-serializable")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--read-only", action="store_true", help="only the readers' speed")
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        _one(*a.one)
        return
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    files = []
    for name, planted in (("valid", 0.0), ("planted", 0.001)):
        stem = BENCH_DIR / f"list-append-{a.txns // 1000}k-{name}"
        t0 = time.perf_counter()
        ops = generate(a.txns, a.procs, a.seed, planted)
        written = write(ops, stem)
        print(
            f"generated {', '.join(f.name for f in written)} ({len(ops)} ops) in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        files += written
    if a.generate_only:
        return
    if a.read_only:
        for f in [*files, keyword_keys(files[1])]:
            print(read_speed(f))
        return
    for f in files:
        # a fresh interpreter per check, so that each peak RSS is that check's own
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(f), a.consistency],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout)
        st = r["stats"] or {}
        load = os.getloadavg()[0]
        print(
            f"{f.name}: {r['cpu']:.2f} s CPU, {r['wall']:.2f} s wall (load {load:.1f}), "
            f"peak RSS {r['rss_mb']:.0f} MB, exit {r['rc']}; "
            f"infer {st.get('infer_s')} s, cycles {st.get('cycles_s')} s, "
            f"{st.get('ordered_pairs')} ordered pairs; {r['summary'] or r['err']}"
        )


if __name__ == "__main__":
    main()
