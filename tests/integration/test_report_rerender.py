"""`chaos report` on a copy of a run `chaos run` just stored draws the page the run drew.

Issue 22's bug: the report's loader read spec.json's old ``lab`` key while runs write
``workload``, so a re-rendered page lost its workload's own sections; the unit tests' synthetic
runs still wrote ``lab``. These runs are real, so the spec is whatever chaos writes today.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from chaos.core.capabilities import Names
from chaos.workloads import registry
from tests.integration.conftest import chaos, run_dir_from

pytestmark = pytest.mark.integration

SECTION = re.compile(r'<section id="([^"]+)">\s*<h2>([^<]*)')


def _sections(page: Path) -> list[tuple[str, str]]:
    return SECTION.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("workload", "fault", "own"),
    [
        ("lab3", ("--nemesis", "pause"), ("lab-report", "Lab report")),
        # the holder paused past its lease at once: the unsafe-lease story is always told
        (
            "lab1",
            ("--trigger", "pause holder after lock-acquired for 6s"),
            ("lease", "Unsafe lease"),
        ),
    ],
    ids=["lab3", "lab1"],
)
def test_report_on_a_copy_reproduces_the_runs_own_page(
    workload: str, fault: tuple[str, str], own: tuple[str, str], store: Path, tmp_path: Path
) -> None:
    p = chaos("run", workload, *fault, "--seed", "3", "-q", store=store, page=True)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    run_dir = run_dir_from(p)
    original = _sections(run_dir / "report.html")
    assert own[0] in dict(original), original
    assert dict(original)[own[0]].startswith(own[1])
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy, symlinks=True)
    (copy / "report.html").unlink()
    again = chaos("report", str(copy), store=None)
    assert again.returncode == 0, again.stdout + again.stderr
    assert Path(again.stdout.strip()) == copy.resolve() / "report.html"
    assert _sections(copy / "report.html") == original

    # the same real run proves the workload's Names complete (the words a command is checked
    # against before anything starts): every process it ran, every event kind it reported
    wl = registry.get(workload)
    assert isinstance(wl, Names)
    processes = {log.stem for log in (run_dir / "logs").glob("*/*.log")}
    assert processes and processes <= set(wl.roles), processes - set(wl.roles)
    lines = (run_dir / "events.jsonl").read_text().splitlines()[1:]
    kinds = {json.loads(line)["kind"] for line in lines if line.strip()}
    assert kinds and kinds <= set(wl.event_kinds), kinds - set(wl.event_kinds)
