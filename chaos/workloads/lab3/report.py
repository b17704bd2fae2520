"""lab3's section of the report page: ``lab-report.json`` as a table (chaos.report.contrib).

One row per scenario, one column per key the lab wrote (stream count, redeliveries, counter,
results, verdict, ...); the rest of the file as key/value rows, and a link to the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaos.report.contrib import Section
from chaos.report.html import e, fmt_value, kv_table, table
from chaos.report.loading import RunData
from chaos.report.sections import VERDICTS

__all__ = ["LabReportSection", "lab_report_table"]

LAB_REPORT = "lab-report.json"


def lab_report_table(report: dict[str, Any]) -> str:
    if not report:
        return ""
    parts = []
    scenarios = report.get("scenarios")
    if isinstance(scenarios, dict) and all(isinstance(v, dict) for v in scenarios.values()):
        cols: list[str] = []
        for v in scenarios.values():
            cols.extend(k for k in v if k not in cols)
        rows = []
        for name, v in scenarios.items():
            cells = [e(name)]
            for c in cols:
                x = v.get(c, "")
                if c == "verdict" and x in VERDICTS:
                    cells.append(f'<span class="pill {e(x)}">{e(x)}</span>')
                else:
                    cells.append(e(fmt_value(x)) if x != "" else "")
            rows.append(cells)
        parts.append(table(["scenario", *cols], rows, raw=True))
        rest = {k: v for k, v in report.items() if k != "scenarios"}
    else:
        rest = report
    if rest:
        parts.append(kv_table(rest))
    parts.append(f'<p class="muted">The file itself: <a href="{LAB_REPORT}">{LAB_REPORT}</a>.</p>')
    return "".join(parts)


class LabReportSection:
    """The *Lab report* section, after the plots; a :class:`~chaos.report.contrib.SectionContributor`."""

    def expected_files(self) -> Mapping[str, str]:
        return {LAB_REPORT: "no lab report table"}

    def sections(self, run: RunData) -> Sequence[Section]:
        body = lab_report_table(run.lab_report) or f'<p class="muted">{LAB_REPORT} is missing.</p>'
        return [Section(id="lab-report", title="Lab report", html=body, after="plots")]
