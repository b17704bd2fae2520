"""``chaos report`` and ``chaos serve`` on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from tests.fixtures import synthetic_runs as runs

# about what is served and printed, not about the plots (see conftest.no_plots)
pytestmark = pytest.mark.usefixtures("no_plots")


def test_report_renders_offline_and_prints_the_path(tmp_path: Path) -> None:
    run_dir = runs.invalid_lab3(tmp_path / "store")
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    out = Path(result.output.strip())
    assert out == run_dir.resolve() / "report.html"
    assert "task t7: counter incremented twice" in out.read_text()


def test_report_on_a_folder_that_is_not_a_run_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 3
    assert "is not a stored run" in result.output


def test_serve_is_wired_with_a_loopback_default() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    assert "[default: 127.0.0.1]" in result.output and "--store" in result.output


def test_report_shows_the_workloads_own_sections(tmp_path: Path) -> None:
    lab1 = runs.lab1_unsafe_lease(tmp_path / "store")
    result = CliRunner().invoke(main, ["report", str(lab1)])
    assert result.exit_code == 0, result.output
    assert 'id="unsafe-lease"' in Path(result.output.strip()).read_text()
    lab3 = runs.valid_lab3(tmp_path / "store")
    result = CliRunner().invoke(main, ["report", str(lab3)])
    assert result.exit_code == 0, result.output
    assert '<section id="lab-report">' in Path(result.output.strip()).read_text()
