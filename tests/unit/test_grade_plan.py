"""``chaos grade --plan``: the matrix x rows x repeats and an estimate, nothing run or written
(issue 31, "the plan before the work")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.grade import estimate

REPO = Path(__file__).resolve().parents[2]
LAB3 = REPO / "chaos" / "workloads" / "lab3" / "solutions"


def test_the_estimate_is_the_measured_throughput() -> None:
    assert estimate.seconds_per_run(1) == 12.2
    assert estimate.seconds_per_run(4) == estimate.seconds_per_run(16) == 5.5
    assert 5.5 < estimate.seconds_per_run(2) < 12.2


def test_plan_counts_every_run_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs = tmp_path / "subs"
    for name, sol in (("alice", "reference"), ("bob", "check_then_act")):
        (subs / name).mkdir(parents=True)
        shutil.copy(LAB3 / sol / "protocol.py", subs / name / "protocol.py")
    (subs / "carol").symlink_to(subs / "alice")  # a row that is not run, said why
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = CliRunner().invoke(
        main,
        ["grade", str(subs), "--workload", "lab3", "--repeats", "2", "--controls", "reference",
         "--parallel", "1", "--seed", "5", "--plan", "-q"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    # 8 configurations x (reference + alice + bob) x 2
    assert "plan: 3 row(s) x 8 configuration(s) x 2 repeat(s) = 48 run(s) (1 row(s) not run)" in (
        r.output
    )
    assert "about 9 min 45 s at 1 run(s) at a time" in r.output
    assert "--trigger 'kill worker after write of counter'" in r.output
    assert "carol (student): not run:" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no grades/ folder


def test_plan_refuses_what_a_grade_refuses(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["grade", str(tmp_path / "none"), "--workload", "lab3", "--plan"])
    assert r.exit_code == 3, r.output
    assert "not a folder of submissions" in r.output
