"""Strings from inputs reach the terminal with their control characters escaped, in every
printer: ``chaos check RUN`` (print_results), ``chaos check FILE --model`` (its own printer) and
its list of unreadable lines."""

from __future__ import annotations

import pytest

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.cli.model_check import _echo_result
from chaos.cli.output import print_results

EVIL = "t1\x1b]0;owned\x07\x1b[2J\x9b31m"


def _result() -> CheckResult:
    step = {"time": 1.0, "node": EVIL, "component": EVIL, "step": EVIL, "during": [EVIL]}
    return CheckResult(
        checker=EVIL,
        verdict=Verdict.INVALID,
        summary=f"task {EVIL} applied twice",
        anomalies=[{"task_id": EVIL, "chain": [step]}],
    )


@pytest.mark.parametrize("printer", ["run", "file"])
def test_task_ids_with_escape_sequences_are_escaped(
    printer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if printer == "run":
        print_results([_result()], Verdict.INVALID)
    else:
        _echo_result(_result())
    out = capsys.readouterr().out
    assert "t1\\x1b]0;owned\\x07" in out  # shown, escaped
    for raw in ("\x1b]", "\x07", "\x1b[2J", "\x9b"):
        assert raw not in out
