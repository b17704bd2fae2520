"""Adding a fault whose process dies is one file and one row (issue 33).

The test copies the package into a scratch tree, adds ``chaos/nemesis/term.py`` (SIGTERM, a
``KillFault`` with another signal) and one row in ``chaos/nemesis/table.py`` (with its import),
nothing else, and finds the fault where it must be: a trigger phrase takes it, a triggered firing
of it ends without waiting for the held process to answer its release (that process is gone), and
the history's record of it reads with the row's verb and colour in the checkers' description and
the report's band.

"Without waiting" is counted, not timed: the trigger asks ``ctx.release_answered`` only on the
path that waits (up to 3 s) for an answer. A ``pause`` fired in the same tree takes that path, so
the count can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TERM = '''"""``term``: SIGTERM processes, restart them when the fault heals (a graceful stop)."""

from __future__ import annotations

import signal

from chaos.nemesis.kill import KillFault


class TermFault(KillFault):
    name = "term"
    signum = signal.SIGTERM
'''

ROW = """    FaultKind(
        name="term",
        make=TermFault,
        help="SIGTERM processes, restart them at heal",
        verb="terminated",
        colour="#9d0208",
        undo=None,
        dies=True,
    ),
"""

FIRE = """
import json, sys
from pathlib import Path

import chaos
from chaos.checkers.faults import fault_intervals
from chaos.core.ledger import FaultLedger
from chaos.histories.jsonl import read_history
from chaos.nemesis import table
from chaos.nemesis.trigger import TriggerNemesis, bind, parse_trigger
from chaos.report.faults import fault_bands
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_fault_confirmation import _ctx, hold_reached

assert Path(chaos.__file__).is_relative_to(Path.cwd()), chaos.__file__  # the scratch tree's
out = {}
for fault, tmp in (("term", Path(sys.argv[1])), ("pause", Path(sys.argv[2]))):
    ctx, cluster = _ctx(tmp)
    ctx.faults = FaultLedger(ctx.history, tmp / "faults.json", kinds=table.recorded())
    asked = []
    answered = ctx.release_answered
    ctx.release_answered = lambda *a: asked.append(a) or answered(*a)
    tr = bind(parse_trigger(f"{fault} worker on delivery"), Lab3(), "lab3")
    worker = ctx.cluster.pid("n1", "worker")
    reacher = hold_reached(ctx, tr.point.file, worker)
    nemesis = TriggerNemesis(tr, table.fault_table(None)[fault], default_duration=0.1, wait=5)
    nemesis.run(ctx)
    reacher.join()
    ctx.supervisor.stop()
    ops = read_history(tmp / "history.jsonl").records
    (iv,) = fault_intervals(ops)
    (band,) = fault_bands(ops, 10.0)
    out[fault] = {
        "asked": len(asked),
        "signal": iv.targets[0].get("signal"),
        "restarted": ctx.cluster.pid("n1", "worker") not in (None, worker),
        "describe": iv.describe(),
        "colour": band.colour,
    }
print(json.dumps(out))
"""


def _scratch(tmp_path: Path) -> Path:
    """The package with the ``term`` fault added: one new file, one row and its import."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "chaos", root / "chaos", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "chaos" / "nemesis" / "term.py").write_text(TERM, encoding="utf-8")
    table = root / "chaos" / "nemesis" / "table.py"
    text = table.read_text(encoding="utf-8")
    imports, row = (
        "from chaos.nemesis.kill import KillFault\n",
        "KINDS: tuple[FaultKind, ...] = (\n",
    )
    assert text.count(imports) == 1 and text.count(row) == 1
    text = text.replace(imports, imports + "from chaos.nemesis.term import TermFault\n")
    table.write_text(text.replace(row, row + ROW), encoding="utf-8")
    return root


def test_a_term_fault_is_one_file_and_one_row_and_its_firing_waits_for_no_answer(
    tmp_path: Path,
) -> None:
    root = _scratch(tmp_path)
    runs = [tmp_path / "term", tmp_path / "pause"]
    for run in runs:
        run.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{REPO}"}
    r = subprocess.run(
        [sys.executable, "-c", FIRE, *map(str, runs)],
        env=env,
        cwd=root,  # `-c` puts the folder it runs in first on the path: the scratch tree's chaos
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    term, pause = got["term"], got["pause"]
    # the held process got SIGTERM, died, and came back at the heal
    assert term["signal"] == "SIGTERM" and term["restarted"], term
    # no answer awaited from a process that is gone; a paused one is waited for
    assert term["asked"] == 0, term
    assert pause["asked"] > 0, pause
    # the history's record reads with the row's verb and colour
    assert "n1's worker terminated at" in term["describe"], term
    assert term["colour"] == "#9d0208"
    assert "n1's worker paused at" in pause["describe"] and pause["colour"] == "#f4a261"
