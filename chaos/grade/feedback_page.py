"""A student's feedback page: what failed, the anomaly that explains it, the command that
reproduces it at home, and links to the student's own run pages (copied beside the page).

Written for the student, not the instructor: no class table, no other submission, no
configuration's internals beyond the command; self-contained (inline style, no script, no
external asset) so that it opens from the unzipped pack with no network.
"""

from __future__ import annotations

from pathlib import Path

from chaos.grade.report import E
from chaos.grade.scrub import SOLUTION
from chaos.grade.story import NO_VERDICT, ConfigStory, Student
from chaos.grade.task import RunResult

# a story longer than this shows its first steps; the run's page has them all
MAX_STEPS = 40

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;padding:1.2em;max-width:60em;color:#222}
h1{font-size:1.45em}h2{font-size:1.2em;margin-top:1.8em}h3{font-size:1.05em;margin:.2em 0 .4em}
section{border:1px solid #ddd;border-radius:6px;padding:.7em 1em;margin:.8em 0}
section.failed{border-left:6px solid #c0392b}section.passed{border-left:6px solid #27ae60}
section.none{border-left:6px solid #999}
pre{background:#f5f5f5;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere;margin:.4em 0}
code{overflow-wrap:anywhere}
ol.steps{font-family:ui-monospace,monospace;font-size:.9em;padding-left:2.2em}
.muted{color:#555;font-size:.92em}.sentence{font-weight:600}
ul.runs{padding-left:1.2em;margin:.3em 0}
"""


def run_folder(config: str, repeat: int) -> str:
    """A run's folder inside a pack (relative to the pack's root)."""
    return f"runs/{config}/r{repeat}"


def _link(run: RunResult, config: str, folder: Path) -> str:
    rel = run_folder(config, run.repeat)
    what = NO_VERDICT.get(run.status, run.status)
    if run.status in ("valid", "invalid", "unknown"):
        what = run.status
    if (folder / rel / "report.html").is_file():
        return f'<li><a href="{E(rel)}/report.html">run {run.repeat}</a>: {E(what)}</li>'
    return f"<li>run {run.repeat}: {E(what)} (no page)</li>"


def _runs(s: ConfigStory, folder: Path) -> str:
    if not s.results:
        return '<p class="muted">Not run.</p>'
    return '<ul class="runs">' + "".join(_link(r, s.config, folder) for r in s.results) + "</ul>"


def _why(s: ConfigStory) -> str:
    shown = s.shown
    if shown is None:
        return ""
    if s.lead is not None:
        steps = s.lead.steps[:MAX_STEPS]
        more = len(s.lead.steps) - len(steps)
        items = "".join(f"<li>{E(x)}</li>" for x in steps)
        tail = f'<p class="muted">… {more} more step(s) on the run\'s page.</p>' if more else ""
        ol = f'<ol class="steps">{items}</ol>{tail}' if items else ""
        return (
            f"<p>What went wrong in run {shown.repeat} (found by the "
            f"<code>{E(s.lead.checker)}</code> check):</p>"
            f'<p class="sentence">{E(s.lead.sentence)}</p>{ol}'
        )
    said = shown.message or shown.anomaly or NO_VERDICT.get(shown.status, shown.status)
    return f'<p>Run {shown.repeat}: {E(shown.status)}: <span class="sentence">{E(said)}</span></p>'


def _reproduce(s: ConfigStory) -> str:
    if not s.command:
        return ""
    return (
        "<p>Reproduce it on your machine (from a checkout of chaos, with the folder that holds "
        f"your <code>protocol.py</code> in place of <code>{E(SOLUTION)}</code>; the same seed "
        "puts the same faults at the same points):</p>"
        f"<pre><code>{E(s.command)}</code></pre>"
    )


def _section(s: ConfigStory, folder: Path) -> str:
    if s.runs == 0:
        klass, head = "none", "no graded run"
    elif s.failed:
        klass, head = "failed", f"failed {s.runs - s.passes} of {s.runs} run(s)"
    else:
        klass, head = "passed", f"passed {s.passes} of {s.runs} run(s)"
    body = (_why(s) + _reproduce(s)) if s.failed or s.runs == 0 else ""
    return (
        f'<section class="{klass}" id="config-{E(s.config)}"><h3>{E(s.config)}: {head}</h3>'
        f"{body}{_runs(s, folder)}</section>"
    )


def _summary(student: Student) -> str:
    got, most = student.points
    graded = [s for s in student.stories if s.runs]
    ok = sum(1 for s in graded if not s.failed)
    score = "" if most == 0 else f"{got:g} of {most:g} point(s) ({100 * got / most:.0f}%); "
    return (
        f"<p>{score}{ok} of {len(student.stories)} configuration(s) passed every run. A run "
        "passes when chaos finds no anomaly in what it observed itself (its clients' history, "
        "etcd's record, the broker's state), never from what the code reports.</p>"
    )


def page(student: Student, folder: Path) -> str:
    """The page of ``student``'s pack, whose runs are copied under ``folder``."""
    failed = [s for s in student.stories if s.failed or s.runs == 0]
    passed = [s for s in student.stories if s not in failed]
    reason = f'<p class="sentence">{E(student.reason)}</p>' if student.reason else ""
    fail_html = "".join(_section(s, folder) for s in failed) or "<p>Nothing failed.</p>"
    pass_html = "".join(_section(s, folder) for s in passed) or "<p>No configuration passed.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{E(student.workload)} feedback: {E(student.name)}</title><style>{STYLE}</style></head><body>
<h1>{E(student.workload)} feedback: {E(student.name)}</h1>
{_summary(student)}{reason}
<h2 id="failed">What failed</h2>
{fail_html}
<h2 id="passed">What passed</h2>
{pass_html}
<h2 id="reading">Reading a run's page</h2>
<p class="muted">Each run's page (the links above) shows the verdict, the anomaly with its
sequence diagram, a timeline of operations and faults, and the run's files. A failing run means a
real anomaly happened in your code under that fault; passing once does not prove the code right.</p>
</body></html>
"""
