"""Exit 5 is for chaos's own bugs only, and points to a log that holds the traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from tests.fixtures.hostile_inputs import RUNS, write_run


def test_a_bug_exits_5_with_one_line_and_a_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaos.orchestrator import recheck

    def bug(*_: object) -> None:
        raise KeyError("a bug of chaos's own")

    monkeypatch.setattr(recheck, "check_stored_run", bug)  # where `chaos check RUN` calls it
    run = write_run(tmp_path, next(c for c in RUNS if c.name == "no-final"))
    res = CliRunner().invoke(main, ["check", str(run)])
    assert res.exit_code == 5
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    m = re.search(r"internal error: KeyError: .*; details in (\S+\.log)$", line)
    assert m, line
    log = Path(m.group(1)).read_text()
    assert "Traceback" in log and "a bug of chaos's own" in log
    Path(m.group(1)).unlink()


def test_bad_input_is_never_exit_5(tmp_path: Path) -> None:
    long = tmp_path / ("a" * 5000)
    res = CliRunner().invoke(main, ["check", str(long)])
    assert res.exit_code == 3 and "File name too long" in res.output
    res = CliRunner().invoke(main, ["check", str(long), "--model", "counter"])
    assert res.exit_code == 3
