"""``render(run_dir)``: one self-contained HTML page per run, verdict first.

Every section is built independently and a section that fails becomes a visible note instead of a
traceback: a report is most needed for exactly the runs whose data is odd.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import time
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import chaos
from chaos.histories.store import faults_of
from chaos.report.clientops import ClientOp, client_ops
from chaos.report.clocks import clocks_section, read_clocks
from chaos.report.contrib import GENERIC_ORDER, ContributorsFor, Section, SectionContributor
from chaos.report.cycle import cycle_svg
from chaos.report.faults import FaultBand, fault_bands
from chaos.report.figures import Plot
from chaos.report.final_state import final_section
from chaos.report.findings import Finding, classify, group_by_cause
from chaos.report.html import as_text, e, kv_table, section, table
from chaos.report.loading import REPORT_NAME, EventRow, OpRow, RunData, load
from chaos.report.sections import (
    checker_results,
    checkers_table,
    missing_notice,
    params_section,
    plots_section,
    problems_section,
    verdict_block,
)
from chaos.report.sequence import fault_hits, sequence_svg, step_rows
from chaos.report.tasks import TaskIndex, TaskView
from chaos.report.timeline import timeline_data, timeline_html

MAX_DIAGRAMS = 12
# below this many completed client ops the generic plots are folded away
FEW_OPS = 20


def _note(what: str, x: Exception) -> str:
    detail = "".join(traceback.format_exception_only(x)).strip()
    return f'<div class="notice">The {e(what)} could not be drawn: <code>{e(detail)}</code></div>'


def _safe(title: str, build: Callable[[], str]) -> str:
    try:
        return build()
    except Exception as x:  # one odd field must not cost the reader the rest of the page
        return _note(f"{title} section", x)


def task_events(events: list[EventRow], history: list[OpRow]) -> list[EventRow]:
    """The events the task diagrams draw: the services' own, without the crashes they claim
    (a service never reports one; the host makes them), and the crashes the host made at fault
    points and saw, at the moment it saw the exit (the heal ops' facts)."""
    out = [e for e in events if e.kind != "crash"]
    for op in history:
        v = op.value
        if op.extra.get("phase") != "heal" or not isinstance(v, dict):
            continue
        seen = v.get("exit_seen_at")
        if not isinstance(seen, int | float) or isinstance(seen, bool):
            continue
        task = v.get("task_id")
        out.append(
            EventRow(float(seen), str(v.get("node")), str(v.get("process")), "crash",
                     str(task) if task is not None else None, None,
                     v.get("killed_pid") if isinstance(v.get("killed_pid"), int) else None,
                     {"fault": v.get("point"), "by": "the host"})
        )  # fmt: skip
    return sorted(out, key=lambda e: e.time)


def _cycle(anomaly: dict[str, Any]) -> str:
    return cycle_svg(anomaly) or ""


def _file_name(task_id: str) -> str:
    return "sequence-" + re.sub(r"[^A-Za-z0-9_.-]", "_", task_id)[:80] + ".svg"


class _Page:
    def __init__(self, run: RunData) -> None:
        self.run = run
        self.end = run.end_time
        self.ops: list[ClientOp] = client_ops(run.history, self.end)
        self.bands: list[FaultBand] = fault_bands(run.history, self.end)
        self.tasks = TaskIndex(
            task_events(run.events, run.history), self.ops, self.bands, final=run.final
        )
        self.plots: list[Plot] = []
        self.sections: list[tuple[str, str, str]] = []

    def add(self, sid: str, title: str, build: Callable[[], str]) -> None:
        body = _safe(title, build)
        if body:
            self.sections.append((sid, title, body))

    def diagram(self, view: TaskView, caption: str) -> str:
        svg = sequence_svg(view, caption)
        plots = self.run.path / "plots"
        try:
            plots.mkdir(exist_ok=True)
            (plots / _file_name(view.task_id)).write_text(svg, encoding="utf-8")
        except OSError:
            pass  # the page itself carries the diagram; a read-only store only loses the file copy
        rows = step_rows(view)
        chain = table(["time (s)", "where", "event", "data"], rows) if rows else ""
        return (
            f'<div class="seq-wrap">{svg}</div>'
            f"<details><summary>events of task {e(view.task_id)}</summary>{chain}</details>"
        )

    def card(self, f: Finding, drawn: list[int]) -> str:
        """One finding with its evidence; its task's diagram while fewer than MAX_DIAGRAMS."""
        title = f.title()
        shown = {k: v for k, v in f.record.items() if v != title and k != "finding"}
        body = [
            f'<div class="finding {f.kind}" data-kind="{f.kind}" data-task="{e(f.task() or "")}">'
            f"<h3>{e(f.checker)}: {e(title)}</h3>",
            kv_table(shown) if shown else "",
        ]
        svg = _safe("cycle", partial(_cycle, f.record))
        if svg:
            body.append(f'<div class="cycle-wrap">{svg}</div>')
        tid = f.task()
        view = self.tasks.view(tid) if tid else None
        if view is not None and drawn[0] < MAX_DIAGRAMS:
            drawn[0] += 1
            body.append(_safe("sequence diagram", partial(self.diagram, view, f"task {tid}")))
        elif tid and view is None:
            body.append(f'<p class="muted">No events or ops name task {e(tid)}.</p>')
        body.append("</div>")
        return "".join(body)

    def findings(self) -> str:
        """Anomalies by root cause, each cause told by its most explanatory finding; then the
        observations and notes, folded: they explain, they do not accuse."""
        found = classify(checker_results(self.run))
        if not found:
            return '<p class="muted">The checkers reported no findings.</p>'
        out: list[str] = []
        drawn = [0]
        anomalies = [f for f in found if f.kind == "anomaly"]
        groups = group_by_cause(anomalies, self.bands)
        if len(groups) > 1 or (groups and groups[0].rest):
            out.append(
                f"<p>{len(anomalies)} anomal{'y' if len(anomalies) == 1 else 'ies'} from "
                f"{len(groups)} root cause{'' if len(groups) == 1 else 's'}, the most "
                "explanatory first.</p>"
            )
        for g in groups:
            out.append(f'<div class="cause"><h3 class="cause-title">Root cause: {e(g.cause)}</h3>')
            out.append(self.card(g.lead, drawn))
            if g.rest:
                rows = [[f.checker, f.title()] for f in g.rest]
                cards = "".join(self.card(f, drawn) for f in g.rest)
                out.append(
                    f"<p>{len(g.rest)} more with the same cause:</p>"
                    + table(["checker", "anomaly"], rows)
                    + f"<details><summary>their evidence</summary>{cards}</details>"
                )
            out.append("</div>")
        for kind, heading, why in (
            ("observation", "Observations", "expected or defended: they do not break the verdict"),
            ("note", "Notes", "a checker could not decide: worth reading, they prove nothing"),
        ):
            mine = [f for f in found if f.kind == kind]
            if not mine:
                continue
            rows = [[f.checker, f.title()] for f in mine]
            cards = "".join(self.card(f, drawn) for f in mine)
            out.append(
                f'<div class="findings-{kind}"><h3>{heading} ({len(mine)}) '
                f'<span class="muted">— {why}</span></h3>'
                + table(["checker", kind], rows, cls=f"grid {kind}")
                + f"<details><summary>their evidence</summary>{cards}</details></div>"
            )
        return "".join(out)

    def anomaly_tasks(self) -> list[str]:
        """Every task a finding names: the normal task is one that none names."""
        return [t for f in classify(checker_results(self.run)) if (t := f.task())]

    def fault_task(self) -> tuple[str, TaskView, list[FaultBand]] | None:
        """The first task a fault stopped one of the lanes of, out of the eventful ones."""
        for tid in self.tasks.eventful():
            view = self.tasks.view(tid)
            hits = fault_hits(view) if view is not None else []
            if view is not None and hits:
                return tid, view, hits
        return None

    def has_anomaly(self) -> bool:
        return any(f.kind == "anomaly" for f in classify(checker_results(self.run)))

    def normal_task(self) -> str:
        if not self.has_anomaly():
            # A valid run has no anomaly to compare with: what a reader wants is what the
            # fault did to the task it hit, and that the system recovered.
            hit = self.fault_task()
            if hit is not None:
                hit_id, hit_view, bands = hit
                faults = ", ".join(b.label for b in bands)
                return (
                    f"<p>No finding breaks the verdict. Task <b>{e(hit_id)}</b> is one the "
                    f"fault hit ({e(faults)}): its hops, with the fault on the lanes it "
                    "stopped.</p>" + self.diagram(hit_view, f"task {hit_id} (hit by the fault)")
                )
        tid = self.tasks.normal(self.anomaly_tasks())
        view = self.tasks.view(tid) if tid else None
        if view is None:
            return ""
        compare = " — compare its hops with the anomaly's" if self.has_anomaly() else ""
        return f"<p>Task <b>{e(tid)}</b> went the ordinary way{compare}.</p>" + self.diagram(
            view, f"task {tid} (normal)"
        )

    def excerpt(self) -> str:
        tid = self.tasks.best_excerpt()
        view = self.tasks.view(tid) if tid else None
        if view is None:
            return ""
        rows = step_rows(view)
        return (
            f"<p>The events of task <b>{e(tid)}</b>, chosen because it shows the most of "
            "publish → delivery → commit → redelivery → suppression → ACK.</p>"
            + table(["time (s)", "where", "event", "data"], rows)
        )

    def timeline(self) -> str:
        if not self.ops and not self.run.events:
            return '<p class="muted">No ops and no events were recorded.</p>'
        return timeline_html(timeline_data(self.ops, self.bands, self.run.events, self.end))

    def plot_section(self) -> str:
        if not self.ops:
            return '<p class="muted">No client ops were recorded: nothing to plot.</p>'
        from chaos.report.plots import make_plots  # matplotlib is imported only to draw

        self.plots = make_plots(self.ops, self.bands, self.run.path / "plots", self.end)
        done = sum(1 for op in self.ops if op.completed)
        if done >= FEW_OPS:
            return plots_section(self.plots)
        # A handful of points makes empty-looking axes a reader stares at for a meaning.
        return (
            f'<p class="muted">Only {done} op{"" if done == 1 else "s"} completed: too few for '
            "latency and throughput to say anything; the plots are folded.</p>"
            f"<details><summary>plots</summary>{plots_section(self.plots)}</details>"
        )

    def faults(self) -> str:
        if not self.bands:
            return ""
        rows = [
            [
                b.fault_id,
                b.fault,
                b.target or "not recorded",
                f"{b.start:.3f}",
                "never healed" if b.open else f"{b.end:.3f}",
                f"{b.end - b.start:.3f}",
            ]
            for b in self.bands
        ]
        return table(["fault id", "fault", "target", "from (s)", "to (s)", "for (s)"], rows)


def _contributed(
    run: RunData, contributors: Sequence[SectionContributor]
) -> list[tuple[str, str, str, str]]:
    """The contributors' sections as ``(after, id, title, body)``; one that raises becomes a
    note in place of its sections."""
    out: list[tuple[str, str, str, str]] = []
    for c in contributors:
        try:
            got: Sequence[Section] = c.sections(run)
        except Exception as x:  # one workload's odd data must not cost the generic page
            name = type(c).__name__
            out.append(("plots", f"contrib-{name}", name, _note(f"{name} sections", x)))
            continue
        out.extend((s.after, s.id, s.title, s.html) for s in got if s.html)
    return out


def build_page(run: RunData, contributors: Sequence[SectionContributor] = ()) -> str:
    p = _Page(run)
    lab = run.lab
    p.add("checkers", "Checkers", lambda: checkers_table(run))
    p.add("anomalies", "Findings and their evidence", p.findings)
    if p.tasks.events_by_task:
        hit = not p.has_anomaly() and p.fault_task() is not None
        title = "The task the fault hit" if hit else "A normal task, for comparison"
        p.add("normal", title, p.normal_task)
    p.add("timeline", "Timeline", p.timeline)
    p.add("faults", "Faults injected", p.faults)
    p.add("plots", "Latency and throughput", p.plot_section)
    if p.tasks.events_by_task:
        p.add("excerpt", "Event excerpt of one task", p.excerpt)
    if run.final:
        p.add("final", "Final state", lambda: final_section(run.final, run.spec))
    clocks = read_clocks(run.path)
    if clocks is not None:
        p.add("clocks", "Node clocks", lambda: clocks_section(clocks, run.events))
    p.add("params", "Parameters and reproduction", lambda: params_section(run))
    p.add("problems", "Problems reading the run", lambda: problems_section(run))
    # A contributed section goes right after the generic one it names (in GENERIC_ORDER), so
    # a workload places its story without knowing which generic sections this run shows.
    rank = {sid: 2 * i for i, sid in enumerate(GENERIC_ORDER)}
    placed = [(rank.get(sid, 2 * len(GENERIC_ORDER)), sid, t, b) for sid, t, b in p.sections]
    placed += [
        (rank.get(after, rank["plots"]) + 1, sid, t, b)
        for after, sid, t, b in _contributed(run, contributors)
    ]
    placed.sort(key=lambda x: x[0])
    p.sections = [(sid, t, b) for _, sid, t, b in placed]
    expected = {k: v for c in contributors for k, v in _expected(c).items()}

    css = resources.files("chaos.report").joinpath("assets/report.css").read_text("utf-8")
    title = f"{lab or 'run'} · {run.name}"
    spec = run.spec
    told = {"solution": as_text(spec.get("solution")), "fault": faults_of(spec) or "none"}
    told["seed"] = as_text(spec.get("seed"))
    sub = " · ".join(f"{k} {v}" for k, v in told.items() if v) if spec else ""
    nav = "".join(f'<a href="#{e(sid)}">{e(t)}</a>' for sid, t, _ in p.sections)
    body = "".join(section(sid, t, b) for sid, t, b in p.sections)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # No network: everything is inline, and the policy makes a stray URL fail loudly.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data: 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>chaos report · {e(title)}</title><style>{css}</style></head><body><main>"
        f"<h1>chaos report · {e(title)}</h1>"
        f'<div class="muted">{e(sub)}</div>'
        + _safe("verdict", lambda: verdict_block(run))
        + missing_notice(run, expected)
        + f"<nav>{nav}</nav>"
        + body
        + f'<p class="muted">Rendered {e(stamp)} by chaos {e(chaos.__version__)} from '
        f"<code>{e(run.home)}</code>.</p></main></body></html>\n"
    )


def _expected(c: SectionContributor) -> dict[str, str]:
    try:
        return dict(c.expected_files())
    except Exception:  # a notice is a courtesy; the contributor's sections say the rest
        return {}


def render(
    run_dir: Path,
    contributors: Sequence[SectionContributor] | ContributorsFor = (),
    *,
    kept_at: Path | None = None,
) -> Path:
    """Write ``run_dir/report.html`` (and ``run_dir/plots/``) and return the page's path.

    ``contributors`` add the run's workload's own sections (chaos.report.contrib): the sections
    themselves, or a lookup from the workload the loaded run names to its sections (``chaos
    report``, ``chaos serve``: the name is read by the same loader as everything else on the
    page). Without any the page has the generic sections only. ``kept_at``: the folder the page
    names as the run's (to re-check or re-render it), if not ``run_dir``.
    """
    # A large run is a few hundred thousand small acyclic objects built in one go; the cyclic
    # collector would rescan the growing heap over and over and more than double the time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        run = load(Path(run_dir))
        if kept_at is not None:
            run = dataclasses.replace(run, kept_at=kept_at)
        chosen = contributors(run.lab) if callable(contributors) else contributors
        page = build_page(run, chosen)
    finally:
        if was_enabled:
            gc.enable()
    out = run.path / REPORT_NAME
    # Written aside then renamed: ``chaos serve`` may be sending the old page while this runs.
    tmp = out.with_name(f".{REPORT_NAME}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out
