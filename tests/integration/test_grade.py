"""`chaos grade` on Docker: a tiny lab3 class (a correct copy, a buggy copy, a folder without
protocol.py, one that crashes on import) with 1 configuration x 1 repeat, plus lab3's reference
as a control (the buggy control's row is the unit tests': tests/unit/test_grade_memory.py). Every
row is right and no container or network of any of its runs is left. The four runs go at once:
one of them ends at its deploy."""

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

from chaos.workloads.lab3.workload import SOLUTIONS_DIR
from tests.fixtures.grade_class import processes_with
from tests.integration.conftest import REPO, leftovers

pytestmark = pytest.mark.integration

MATRIX = """\
configs:
  - name: on-delivery
    run:
      trigger: ["pause worker on delivery"]
      time-limit: 6
      recovery-timeout: 20
"""


def _class(root: Path) -> Path:
    shutil.copytree(
        SOLUTIONS_DIR / "reference", root / "ada", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(
        SOLUTIONS_DIR / "check_then_act", root / "ben", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "cy").mkdir()
    (root / "cy" / "protocol.txt").write_text("wrong name\n")
    shutil.copytree(
        SOLUTIONS_DIR / "reference", root / "dee", ignore=shutil.ignore_patterns("__pycache__")
    )
    with open(root / "dee" / "protocol.py", "a") as fh:
        fh.write("\nraise RuntimeError('crashes on import')\n")
    return root


def test_a_tiny_class_on_docker(tmp_path: Path, engine: docker.DockerClient) -> None:
    subs = _class(tmp_path / "subs")
    (tmp_path / "grade.yaml").write_text(MATRIX)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "grade", str(subs), "--workload", "lab3",
         "--matrix", str(tmp_path / "grade.yaml"), "--repeats", "1", "--seed", "7",
         "--out", str(out), "--parallel", "4", "--controls", "reference"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CHAOS_TEST_GRADE_MARK": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the runs were forks of the grader's warm process (chaos.grade.warm), and none of them, nor
    # that process, outlives the grade (each inherited the mark)
    deadline = time.monotonic() + 15
    while processes_with(f"CHAOS_TEST_GRADE_MARK={out}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_with(f"CHAOS_TEST_GRADE_MARK={out}")
    doc = json.loads((out / "grades.json").read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    cell = {n: r["cells"]["on-delivery"] for n, r in rows.items()}
    assert set(rows) == {"control:reference", "ada", "ben", "cy", "dee"}
    assert (cell["ada"]["passes"], cell["ada"]["runs"]) == (1, 1)
    assert (cell["control:reference"]["passes"], cell["control:reference"]["runs"]) == (1, 1)
    assert (cell["ben"]["passes"], cell["ben"]["runs"]) == (0, 1)
    assert "double-apply" in (cell["ben"]["anomaly"] or "") or cell["ben"]["anomaly"]
    assert rows["cy"]["reason"] == "no protocol.py" and cell["cy"]["runs"] == 0
    assert (cell["dee"]["passes"], cell["dee"]["runs"]) == (0, 1)
    assert "did not start" in (rows["dee"]["reason"] or ""), rows["dee"]
    assert doc["counts"].get("env-error", 0) == 0

    # every run's folder came back; none of their containers or networks is left
    run_ids = []
    for line in (out / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        spec = json.loads((out / r["run_dir"] / "spec.json").read_text())
        run_ids.append(spec["run_id"])
    assert len(run_ids) == 4
    assert [x for rid in run_ids for x in leftovers(engine, rid)] == []
    page = (out / "report.html").read_text()
    assert "chaos run lab3 --trigger" in page and "--solution" in page
