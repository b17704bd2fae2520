"""``results.json``: the checkers' results of a run and their combined verdict, written once.

The one writer of the file (docs/history-format.md, *results.json*): a run writes it when its
checkers finish and ``chaos check`` rewrites it when it re-checks a stored run, so both must
write the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict, combine
from chaos.histories.store import write_json

RESULTS_NAME = "results.json"

__all__ = ["RESULTS_NAME", "results_json", "write_results"]


def results_json(results: Sequence[CheckResult]) -> dict[str, Any]:
    """``{"verdict", "exit_code", "results": [...]}`` with invalid > unknown > valid."""
    verdict = combine(results)
    return {
        "verdict": verdict.value,
        "exit_code": verdict.exit_code,
        "results": [r.to_json() for r in results],
    }


def write_results(run_dir: Path, results: Sequence[CheckResult]) -> Verdict:
    """Write ``run_dir/results.json`` (atomically: a reader never sees half a file) and return
    the combined verdict."""
    doc = results_json(results)
    write_json(Path(run_dir) / RESULTS_NAME, doc)
    return Verdict(doc["verdict"])
