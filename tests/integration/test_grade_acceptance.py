"""The acceptance grade (slow, not run by CI): a copy of every shipped lab3 solution as a student,
one that hangs, lab3's own matrix, three repeats. No false alarm on the reference, every planted
bug caught by some configuration, the hanging one a row with its reason, nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from chaos.workloads.lab3.workload import SOLUTIONS_DIR, Lab3
from tests.integration.conftest import REPO, leftovers

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPEATS = int(os.environ.get("CHAOS_GRADE_REPEATS", "3"))
# concurrent runs (default: what chaos grade picks for this machine)
PARALLEL = os.environ.get("CHAOS_GRADE_PARALLEL")


def test_acceptance_grade_of_every_shipped_solution(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    subs = tmp_path / "subs"
    for name in Lab3.grade_controls:
        folder = SOLUTIONS_DIR / name.replace("-", "_")
        shutil.copytree(folder, subs / f"copy-{name}", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        SOLUTIONS_DIR / "reference", subs / "hangs", ignore=shutil.ignore_patterns("__pycache__")
    )
    with open(subs / "hangs" / "protocol.py", "a") as fh:
        fh.write("\nimport time\ntime.sleep(10**6)\n")
    out = tmp_path / "out"
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "grade", str(subs), "--workload", "lab3",
         "--repeats", str(REPEATS), "--seed", "2026", "--out", str(out),
         *(["--parallel", PARALLEL] if PARALLEL else [])],
        cwd=REPO, capture_output=True, text=True, timeout=4 * 3600,
    )  # fmt: skip
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.copytree(
        out, Path(os.environ.get("CHAOS_GRADE_KEEP", tmp_path / "kept")), dirs_exist_ok=True
    )
    doc = json.loads((out / "grades.json").read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    print(f"\n{len(doc['configs'])} configurations x {REPEATS}: {doc['counts']} in {took:.0f} s")
    for p in doc["power"]:
        fa = p["false_alarms"]
        caught = {k: f"{t['runs'] - t['passes']}/{t['runs']}" for k, t in p["detections"].items()}
        print(f"  {p['config']:28} false alarms {fa['runs'] - fa['passes']}/{fa['runs']}  {caught}")

    for name in ("control:reference", "copy-reference"):
        for c, cell in rows[name]["cells"].items():
            assert cell["passes"] == cell["runs"] == REPEATS, (name, c, cell)
    for name, kind in Lab3.grade_controls.items():
        if kind != "buggy":
            continue
        for row in (f"control:{name}", f"copy-{name}"):
            caught = [c for c, cell in rows[row]["cells"].items() if cell["passes"] < cell["runs"]]
            assert caught, f"{row}: no configuration caught it"
    assert rows["hangs"]["reason"], rows["hangs"]
    assert all(cell["passes"] == 0 for cell in rows["hangs"]["cells"].values())
    assert doc["counts"].get("env-error", 0) == 0

    run_ids = []
    for line in (out / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("run_dir"):
            run_ids.append(json.loads((out / r["run_dir"] / "spec.json").read_text())["run_id"])
    assert [x for rid in run_ids for x in leftovers(engine, rid)] == []
