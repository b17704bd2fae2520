"""``chaos check RUN``: a stored run judged again by its workload's checkers, offline.

The run's own checkers (the workload its ``spec.json`` names) and the completeness check no
workload leaves out, as the orchestrator judged it when it ran; the results replace the run's
``results.json``. Nothing here prints: the command line shows what it returns.
"""

from __future__ import annotations

from pathlib import Path

from chaos.checkers.completeness import check_stored_run
from chaos.checkers.results import write_results
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.safe_text import clean
from chaos.histories.store import StoredRun
from chaos.workloads import registry


def recheck(run: StoredRun, shown: Path) -> tuple[list[CheckResult], Verdict]:
    """The results of ``run``'s checkers and their verdict, written to the run's folder.

    ValueError, naming ``shown`` (the path as the user gave it), when ``spec.json`` names no
    workload or one that chaos does not know."""
    if not run.workload:
        raise ValueError(
            f"{shown}/spec.json names no workload; use --model to check the history alone"
        )
    try:
        wl = registry.get(run.workload)
    except ValueError as e:
        raise ValueError(f"{shown / 'spec.json'}: field 'workload': {clean(e)}") from None
    results = check_stored_run(wl, run)
    return results, write_results(run.path, results)
