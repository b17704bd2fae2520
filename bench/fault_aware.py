"""A fault-aware variant of every shipped buggy solution, graded under the lab's default matrix
(issue 29's acceptance: each scores below 1.000 with ``--repeats 1``).

    python3 bench/fault_aware.py lab3|lab1 [--out DIR] [--parallel 2] [--only a,b] [--plan]

A variant is the buggy solution that takes the reference's path at any sign of a fault it can
read, as a student who has read chaos's source would write it:

- a file in the control or claims folders of the live directory (in-process points' armings);
- its own monotonic clock jumping (a pause it lived through), or the wall clock moving against
  the monotonic one (a clock fault), then for the next 10 s;
- another process of its node in state ``T`` (stopped) in ``/proc``.

The variants are written as submissions (one folder each) and graded with ``chaos grade
--controls reference``; the script prints each variant's score and the configurations that
caught it. A variant that scores 1.000 is a bug the matrix misses once the code under test
watches for faults.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from chaos.grade.feedback import GRADEBOOK  # noqa: E402

# the exported functions of each lab's protocol (the same for every solution of a lab)
FUNCTIONS = {
    "lab3": ("complete", "create"),
    "lab1": ("acquire", "extend", "release", "write_change"),
}

VARIANT = '''"""Fault-aware {bug}: the reference's path at any sign of a fault (bench/fault_aware.py)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from chaos.workloads.{lab}.solutions.{module}.protocol import {imports_bug}
from chaos.workloads.{lab}.solutions.reference.protocol import {imports_safe}

__all__ = {exported!r}

GAP = 0.4  # a tick this much late was a pause (or the node's CPU starved it)
WARY = 10.0  # seconds the safe path is kept after a sign
_until = [0.0]


def _watch() -> None:
    mono, skew = time.monotonic(), time.time() - time.monotonic()
    while True:
        time.sleep(0.05)
        now, now_skew = time.monotonic(), time.time() - time.monotonic()
        if now - mono > 0.05 + GAP or abs(now_skew - skew) > GAP:
            _until[0] = now + WARY
        mono, skew = now, now_skew


threading.Thread(target=_watch, daemon=True).start()


def _stopped_sibling() -> bool:
    me = os.getpid()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
    except OSError:
        return False
    for pid in pids:
        try:
            stat = Path(f"/proc/{{pid}}/stat").read_text()
        except OSError:
            continue
        if stat.rpartition(")")[2].split()[:1] == ["T"]:
            return True
    return False


def _signs() -> bool:
    if time.monotonic() < _until[0]:
        return True
    root = Path(os.environ.get("CHAOS_LIVE", "/chaos"))
    node = os.environ.get("CHAOS_NODE", "")
    for d in (root / "control" / "any", root / "control" / node, root / "claims"):
        try:
            if any(d.iterdir()):
                return True
        except OSError:
            continue
    return _stopped_sibling()


{wrappers}
'''

WRAPPER = """def {name}(*args: Any, **kwargs: Any) -> Any:
    return (_safe_{name} if _signs() else _bug_{name})(*args, **kwargs)
"""


def write_variants(lab: str, out: Path, only: set[str] | None) -> list[str]:
    names = []
    fns = FUNCTIONS[lab]
    for module in buggy_modules(lab):
        bug = module.replace("_", "-")
        if only and bug not in only:
            continue
        folder = out / f"{bug}-aware"
        folder.mkdir(parents=True, exist_ok=True)
        text = VARIANT.format(
            bug=bug,
            lab=lab,
            module=module,
            imports_bug=", ".join(f"{f} as _bug_{f}" for f in fns),
            imports_safe=", ".join(f"{f} as _safe_{f}" for f in fns),
            exported=list(fns),
            wrappers="\n\n".join(WRAPPER.format(name=f) for f in fns),
        )
        (folder / "protocol.py").write_text(text)
        names.append(folder.name)
    return names


def buggy_modules(lab: str) -> list[str]:
    root = REPO / "chaos" / "workloads" / lab / "solutions"
    return sorted(
        p.name
        for p in root.iterdir()
        if (p / "protocol.py").exists() and p.name not in ("reference", "starter")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lab", choices=sorted(FUNCTIONS))
    ap.add_argument("--out", type=Path, default=None, help="the grade's folder")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated buggy solutions")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plan", action="store_true")
    a = ap.parse_args()
    subs = Path(tempfile.mkdtemp(prefix=f"fault-aware-{a.lab}-"))
    names = write_variants(a.lab, subs, set(a.only.split(",")) if a.only else None)
    out = a.out or Path(tempfile.mkdtemp(prefix="fault-aware-grade-")) / "grade"
    cmd = [sys.executable, "-m", "chaos.cli", "grade", str(subs), "--workload", a.lab,
           "--repeats", "1", "--controls", "reference", "--parallel", str(a.parallel),
           "--seed", str(a.seed), "--out", str(out), "--feedback", str(out / "feedback")]  # fmt: skip
    if a.plan:
        cmd.append("--plan")
    print("variants:", ", ".join(names), "\n$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, check=False)
    if a.plan:
        return
    book = out / "feedback" / GRADEBOOK
    if not book.exists():
        sys.exit(f"no gradebook CSV under {out}")
    print("\n| variant | score | failed configurations |\n|---|---|---|")
    for row in csv.DictReader(book.open()):
        pct = float(row["percent"] or 0) / 100
        print(f"| {row['student']} | {pct:.3f} | {row['failed'] or '—'} |")


if __name__ == "__main__":
    main()
