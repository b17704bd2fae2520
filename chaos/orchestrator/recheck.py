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
from chaos.core.capabilities import with_stored_options
from chaos.histories.safe_text import clean
from chaos.histories.store import StoredRun
from chaos.workloads import registry


def recheck(run: StoredRun, shown: Path) -> tuple[list[CheckResult], Verdict]:
    """The results of ``run``'s checkers and their verdict, written to the run's folder.

    ValueError, naming ``shown`` (the path as the user gave it), when ``spec.json`` names no
    workload or one that chaos does not know, or options its declarations refuse."""
    if not run.workload:
        raise ValueError(
            f"{shown}/spec.json names no workload; use --model to check the history alone"
        )
    try:
        wl = registry.get(run.workload)
    except ValueError as e:
        raise ValueError(f"{shown / 'spec.json'}: field 'workload': {clean(e)}") from None
    try:  # the options as the run read them, through the workload's declarations
        run = with_stored_options(wl, run)
    except ValueError as e:
        raise ValueError(f"{shown / 'spec.json'}: field 'options': {clean(e)}") from None
    results = check_stored_run(wl, run)
    return results, write_results(run.path, results)
