"""The command samples in README.md, docs/user-guide.md and the lab pages are real output, so they
cannot drift.

A sample is a fenced block between ``<!-- sample -->`` and ``<!-- /sample -->`` whose first line
is ``$ chaos ...``. The test runs that command for real (its own store, in a temporary folder) and
compares what it printed, stdout and stderr as a terminal shows them, with the block — numbers and
run ids aside, which belong to the run, not to the code. ``CHAOS_WRITE_SAMPLES=1`` writes the real
output into the docs instead: that is how the samples are made.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/user-guide.md", "docs/labs/lab3.md", "docs/labs/lab1.md")
BLOCK = re.compile(r"(<!-- sample -->\n```\n)(\$ chaos [^\n]*)\n(.*?)(```\n<!-- /sample -->)", re.S)
RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]+")


def _samples() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for m in BLOCK.finditer((ROOT / doc).read_text(encoding="utf-8")):
            found.append((doc, m[2].removeprefix("$ ")))
    return found


STEP = re.compile(r"^ #\.#s n# ")  # a line of an anomaly's chain of events, once masked


def _shape(text: str) -> list[str]:
    """What a run's output says about the code: every line, with numbers, run ids and column
    padding masked, and the steps of each chain as a sorted group (which of two processes
    reports first within a millisecond is the run's timing, not the code's)."""
    out: list[str] = []
    steps: list[str] = []
    for line in text.splitlines():
        shape = re.sub(r" +", " ", re.sub(r"\d+", "#", RUN_ID.sub("RUN", line))).rstrip()
        if STEP.match(shape):
            steps.append(shape)
            continue
        out += [*sorted(steps), shape]
        steps = []
    return out + sorted(steps)


def _real(command: str, tmp: Path) -> str:
    argv = shlex.split(command)
    assert argv[0] == "chaos", command
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", *argv[1:], "--store", "store"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, cwd=tmp,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert "Traceback" not in p.stdout, p.stdout
    return p.stdout.replace(f"{tmp}/", "")


def test_the_docs_have_samples() -> None:
    docs = {doc for doc, _ in _samples()}
    assert docs == set(DOCS)


@pytest.mark.parametrize(("doc", "command"), _samples(), ids=[c for _, c in _samples()])
def test_a_sample_is_what_the_command_prints(doc: str, command: str, tmp_path: Path) -> None:
    real = _real(command, tmp_path)
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    m = next(m for m in BLOCK.finditer(text) if m[2] == f"$ {command}")
    if os.environ.get("CHAOS_WRITE_SAMPLES") == "1":
        path.write_text(
            text[: m.start(3)] + real.rstrip("\n") + "\n" + text[m.end(3) :], encoding="utf-8"
        )
        return
    assert _shape(m[3]) == _shape(real), (
        f"{doc}: the sample of `{command}` is not what it prints now; "
        "CHAOS_WRITE_SAMPLES=1 rewrites it:\n" + real
    )
