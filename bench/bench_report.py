"""Benchmark: ``chaos report`` on a synthetic lab3 run with a 100k-op history.

The run (tests/fixtures/synthetic_runs.py, ``large_lab3``) has N history ops (N/2 client
invocations, each an invoke and a completion, 16 processes), about 5 events per task and a
fault every 10 s. The figure is the wall time of the real command, interpreter start included,
best and median of a few repeats; the budget is 5 s.

    python bench/bench_report.py                 # 100k ops, 3 repeats
    python bench/bench_report.py --ops 200000 --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.synthetic_runs import large_lab3  # noqa: E402

BUDGET_S = 5.0


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ops", type=int, default=100_000, help="history ops (invokes + completions)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--keep", type=Path, help="write the run here and keep it (to look at the page)"
    )
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = args.keep or Path(tmp) / "store"
        run_dir = large_lab3(store, args.ops)
        n_hist = _lines(run_dir / "history.jsonl") - 1  # less the header line
        n_ev = _lines(run_dir / "events.jsonl") - 1
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "chaos.cli", "report", str(run_dir)],
                check=True,
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - t0)
        page = run_dir / "report.html"
        best, median = min(times), statistics.median(times)
        print(
            f"chaos report: {n_hist} history ops, {n_ev} events -> "
            f"{page.stat().st_size / 1e6:.1f} MB page; "
            f"best {best:.2f} s, median {median:.2f} s over {len(times)} run(s) "
            f"(budget {BUDGET_S:.0f} s)"
        )
        if args.keep:
            print(f"page: {page}")
        return 0 if best <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
