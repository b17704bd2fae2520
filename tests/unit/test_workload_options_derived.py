"""Acceptance of issue 24's first step: adding a workload option is one line in the workload, and
`chaos run --help`, the grade matrix's check and the docs' option table all pick it up."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.core.capabilities import options_of
from chaos.core.options import WorkloadOption, markdown_table
from chaos.grade import matrix
from chaos.grade.start import GradeArgs, request_of
from chaos.workloads import registry
from tests.fixtures.memory_lab3 import MemoryLab3

NAME = "memory-tempo"


class TempoLab(MemoryLab3):
    """The in-memory lab3 with one option more: the single line below is all it takes."""

    options = (
        WorkloadOption("tempo", float, 1.0, "how fast the fake works", low=0.1),
        *MemoryLab3.options,
    )
    grade_matrix = Path(__file__).parents[1] / "fixtures" / "memory_grade.yaml"
    grade_controls = {"reference": "reference"}


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BUILTIN, NAME, TempoLab)


def test_run_help_lists_the_new_option() -> None:
    for command in ("run", "explore"):
        r = CliRunner().invoke(main, [command, "--help"])
        assert r.exit_code == 0, r.output
        assert f"{NAME}: tempo=X>=0.1" in " ".join(r.output.split()), r.output


def _matrix(tmp_path: Path, option: str) -> GradeArgs:
    (tmp_path / "subs" / "alice").mkdir(parents=True, exist_ok=True)
    (tmp_path / "subs" / "alice" / "protocol.py").write_text("x = 1\n")
    m = tmp_path / "grade.yaml"
    m.write_text(
        f"defaults: {{backend: fake}}\nconfigs:\n  - name: slow\n    run:\n      option: {{{option}}}\n"
    )
    return GradeArgs(
        submissions=tmp_path / "subs", lab=NAME, matrix_file=m, seed=1, out=tmp_path / "o"
    )


def test_the_matrix_check_accepts_the_new_option_and_refuses_a_bad_value(tmp_path: Path) -> None:
    req = request_of(_matrix(tmp_path, "tempo: 2"), say=lambda _: None)
    assert req.matrix.get("slow").argv() == ["--backend", "fake", "-o", "tempo=2"]
    with pytest.raises(matrix.MatrixError) as e:
        request_of(_matrix(tmp_path, "tempo: 0.05"), say=lambda _: None)
    assert str(e.value) == (
        f"{tmp_path / 'grade.yaml'}:5: configs[0].run.option.tempo: configuration slow: "
        f"{NAME} option tempo=0.05: expected a number >= 0.1"
    )
    with pytest.raises(matrix.MatrixError, match="has no option tmepo; did you mean tempo"):
        request_of(_matrix(tmp_path, "tmepo: 2"), say=lambda _: None)
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_the_docs_table_has_the_new_option() -> None:
    table = markdown_table(options_of(registry.get(NAME)))
    assert "| `tempo` | a number >= 0.1 | `1` | how fast the fake works |" in table.splitlines()
