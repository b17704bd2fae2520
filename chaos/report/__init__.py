"""Reports: one self-contained HTML page per run (verdict, anomalies with sequence diagrams,
timeline, plots, lab tables, parameters) and ``chaos serve`` to browse a store of runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chaos.report.contrib import Section, SectionContributor
from chaos.report.loading import NotARunDir

__all__ = ["NotARunDir", "Section", "SectionContributor", "render"]


def render(
    run_dir: Path, contributors: Sequence[SectionContributor] = (), *, kept_at: Path | None = None
) -> Path:
    """Write ``run_dir/report.html`` (and ``run_dir/plots/``) and return the page's path;
    ``contributors`` add the workload's own sections (chaos.report.contrib); ``kept_at``: the
    folder the page names as the run's, if not ``run_dir``."""
    # A function rather than a re-export: importing chaos.report (chaos.cli does) stays cheap.
    from chaos.report.page import render as _render

    return _render(run_dir, contributors, kept_at=kept_at)
