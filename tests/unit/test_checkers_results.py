"""results.json: one writer for a run's end and for ``chaos check``."""

from __future__ import annotations

import json
from pathlib import Path

from chaos.checkers.results import write_results
from chaos.checkers.verdict import CheckResult, Verdict


def _r(name: str, verdict: Verdict) -> CheckResult:
    return CheckResult(checker=name, verdict=verdict, summary=f"{name} says {verdict.value}")


def test_write_results_combines_and_writes_every_result(tmp_path: Path) -> None:
    results = [_r("a", Verdict.VALID), _r("b", Verdict.INVALID), _r("c", Verdict.UNKNOWN)]
    assert write_results(tmp_path, results) is Verdict.INVALID
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["verdict"] == "invalid" and doc["exit_code"] == 1
    assert [r["checker"] for r in doc["results"]] == ["a", "b", "c"]
    assert [CheckResult.from_json(r) for r in doc["results"]] == results


def test_write_results_of_no_checker_is_valid_and_replaces_the_old_file(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"verdict": "invalid"}')
    assert write_results(tmp_path, [_r("a", Verdict.UNKNOWN)]) is Verdict.UNKNOWN
    assert json.loads((tmp_path / "results.json").read_text())["exit_code"] == 2
    assert write_results(tmp_path, []) is Verdict.VALID
    assert json.loads((tmp_path / "results.json").read_text())["results"] == []
    assert not list(tmp_path.glob("*.tmp"))
