"""Feedback packs of a real lab3 grade on Docker (issue 32): two students, the shipped reference
and the shipped check-then-act (a dedup read before the transaction), one configuration
(a pause of the worker on delivery) x 1 repeat.

Each student's zip names that student only; the failing student's page gives a command that,
run as the student would (their folder in place of the placeholder), gets the graded verdict
again; and the page, unzipped into a fresh folder, reads right in headless Chromium with no
network: no raw JSON, nothing wider than the viewport, every link resolves (the run page's links
too, inside the pack).
"""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import docker
import pytest

from chaos.exits import Exit
from chaos.grade.scrub import SOLUTION
from chaos.workloads.lab3.workload import SOLUTIONS_DIR
from tests.integration.conftest import REPO, leftovers
from tests.integration.test_page_kinds_browser import (
    _assert_file_links,
    _assert_readable,
    _probe,
)

pytestmark = pytest.mark.integration

MATRIX = """\
configs:
  - name: on-delivery
    run:
      trigger: ["pause worker on delivery"]
      time-limit: 6
      recovery-timeout: 20
"""
GOOD, BAD = "quinn_reference_x", "zora_checkthenact_y"


def _chaos(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("feedback")
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SOLUTIONS_DIR / "reference", root / "subs" / GOOD, ignore=skip)
    shutil.copytree(SOLUTIONS_DIR / "check_then_act", root / "subs" / BAD, ignore=skip)
    (root / "grade.yaml").write_text(MATRIX)
    proc = _chaos(
        "grade", str(root / "subs"), "--workload", "lab3", "--matrix", str(root / "grade.yaml"),
        "--repeats", "1", "--seed", "7", "--out", str(root / "grade"), "--parallel", "2",
        "--controls", "none",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fb = _chaos("feedback", str(root / "grade"), "--out", str(root / "packs"))
    assert fb.returncode == 0, fb.stdout + fb.stderr
    return root


def _ledger(root: Path) -> dict[str, dict[str, object]]:
    lines = (root / "grade" / "runs.jsonl").read_text().splitlines()
    return {str(r["student"]): r for r in map(json.loads, lines)}


def test_each_zip_names_its_student_only(graded: Path, engine: docker.DockerClient) -> None:
    runs = _ledger(graded)
    assert (runs[GOOD]["status"], runs[BAD]["status"]) == ("valid", "invalid"), runs
    for me, other in ((GOOD, BAD), (BAD, GOOD)):
        with zipfile.ZipFile(graded / "packs" / f"{me}.zip") as z:
            files = {n: z.read(n) for n in z.namelist()}
        assert f"{me}/runs/on-delivery/r1/report.html" in files
        for name, data in files.items():
            for never in (other, str(graded), "chaos-grade-"):
                assert never not in name and never.encode() not in data, (me, name, never)
    # the grade's runs left no container or network behind
    for r in runs.values():
        spec = json.loads((graded / "grade" / str(r["run_dir"]) / "spec.json").read_text())
        assert leftovers(engine, spec["run_id"]) == []


def test_the_reproduce_command_gets_the_graded_verdict_again(
    graded: Path, engine: docker.DockerClient
) -> None:
    page = (graded / "packs" / BAD / "index.html").read_text()
    assert "double-apply" in page and "failed 1 of 1 run(s)" in page
    (command,) = re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S)
    argv = shlex.split(html.unescape(command))
    assert argv[:3] == ["chaos", "run", "lab3"] and SOLUTION in argv
    argv[argv.index(SOLUTION)] = str(graded / "subs" / BAD)
    proc = _chaos(*argv[1:], "--store", str(graded / "repro"), "-q", timeout=300)
    assert proc.returncode == Exit.INVALID, proc.stdout + proc.stderr
    assert "INVALID double-apply" in proc.stdout
    spec = json.loads(next((graded / "repro").glob("lab3/*/spec.json")).read_text())
    assert leftovers(engine, spec["run_id"]) == []


def test_the_unzipped_page_reads_right_offline_in_chromium(graded: Path, tmp_path: Path) -> None:
    where = tmp_path / "home"
    with zipfile.ZipFile(graded / "packs" / f"{BAD}.zip") as z:
        z.extractall(where)
    page = where / BAD / "index.html"
    got = _probe(page, tmp_path)
    _assert_readable(got)
    _assert_file_links(got, page)
    assert "runs/on-delivery/r1/report.html" in got["links"]
    run_page = where / BAD / "runs" / "on-delivery" / "r1" / "report.html"
    # the copied run page's links resolve inside the pack (every file it names was copied);
    # how the run page itself reads is test_page_kinds_browser.py's
    _assert_file_links(_probe(run_page, tmp_path), run_page)


def test_the_real_class_report_reads_right_in_chromium(graded: Path, tmp_path: Path) -> None:
    """The class report of a real grade (issue 32: every page kind probed on real runs)."""
    from tests.integration.test_page_kinds_browser import (
        _assert_file_links,
        _assert_readable,
        _probe,
    )

    page = graded / "grade" / "report.html"
    out = _probe(page, tmp_path)
    _assert_readable(out)
    _assert_file_links(out, page)
    text = page.read_text(encoding="utf-8")
    assert GOOD in text and BAD in text
