"""The static check of a student's protocol.py: names a TODO or a missing function, never runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.core.spec import TestSpec
from chaos.node.solution import SolutionError, missing_functions
from chaos.workloads.lab3.workload import Lab3, solution_path


def test_starter_is_reported_function_by_function() -> None:
    with pytest.raises(ValueError, match=r"create \(still a TODO.*complete \(still a TODO"):
        Lab3().preflight(TestSpec(workload="lab3", solution="starter"))


@pytest.mark.parametrize("name", ["reference", "check-then-act", "ack-before-commit"])
def test_shipped_solutions_are_complete(name: str) -> None:
    Lab3().preflight(TestSpec(workload="lab3", solution=name))


def test_missing_and_syntax_errors(tmp_path: Path) -> None:
    (tmp_path / "protocol.py").write_text("def create(store, t, a, e):\n    return e\n")
    assert missing_functions(tmp_path, ["create", "complete"]) == ["complete (not defined)"]
    (tmp_path / "protocol.py").write_text("def create(:\n")
    with pytest.raises(SolutionError, match=r"protocol.py:1: syntax error"):
        missing_functions(tmp_path, ["create"])


def test_unknown_solution_lists_the_builtins() -> None:
    with pytest.raises(ValueError, match="check-then-act"):
        solution_path("nonesuch")
