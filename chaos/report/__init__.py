"""Reports: one self-contained HTML page per run (verdict, anomalies with sequence diagrams,
timeline, plots, lab tables, parameters) and ``chaos serve`` to browse a store of runs."""

from __future__ import annotations

from chaos.report.loading import NotARunDir
from chaos.report.page import render

__all__ = ["NotARunDir", "render"]
