"""The report's sections, each a function of the loaded run to an HTML fragment."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from chaos.histories.store import faults_of, workload_of
from chaos.report.figures import Plot
from chaos.report.html import as_text, e, fmt_value, kv_table, table
from chaos.report.loading import RunData

VERDICTS = ("valid", "invalid", "unknown")
# the spec's fields the Parameters' "fault" row tells (chaos.histories.store.faults_of)
FAULT_FIELDS = ("nemesis", "triggers", "scenario", "schedule")
RANK = {"valid": 0, "unknown": 1, "invalid": 2}


def checker_results(run: RunData) -> list[dict[str, Any]]:
    got = run.results.get("results")
    return [r for r in got if isinstance(r, dict)] if isinstance(got, list) else []


def combined_verdict(run: RunData) -> str:
    """``unchecked`` when no checker ever ran: an interrupted run is not ``unknown`` by verdict,
    it simply has none yet."""
    v = run.results.get("verdict")
    if v in VERDICTS:
        return str(v)
    found = [str(r.get("verdict")) for r in checker_results(run) if r.get("verdict") in VERDICTS]
    if found:
        return max(found, key=RANK.__getitem__)
    return "unchecked"


def verdict_block(run: RunData) -> str:
    verdict = combined_verdict(run)
    results = checker_results(run)
    if verdict == "unchecked":
        why = (
            "results.json is missing: the run ended before its checkers ran."
            if "results.json" in run.missing
            else "results.json holds no verdict."
        )
        path = shlex.quote(str(run.home))
        return (
            '<div class="verdict unchecked" id="verdict"><div class="badge">NOT CHECKED</div>'
            f'<p class="sentence">{e(why)} Re-check it offline with '
            f"<code>chaos check {e(path)}</code>.</p></div>"
        )
    deciders = [r for r in results if r.get("verdict") == verdict]
    if verdict == "valid":
        n = len(results)
        decided = f"all {n} checker{'s' if n != 1 else ''} found the run valid" if n else ""
        sentences = [str(r.get("summary", "")) for r in deciders if r.get("summary")][:3]
    else:
        names = ", ".join(str(r.get("checker", "?")) for r in deciders)
        decided = f"decided by {names}" if names else ""
        sentences = [str(r.get("summary", "")) for r in deciders if r.get("summary")]
    body = "".join(f'<p class="sentence">{e(s)}</p>' for s in sentences)
    return (
        f'<div class="verdict {e(verdict)}" id="verdict"><div class="badge">{e(verdict.upper())}'
        f'</div><p class="decided">{e(decided)}</p>{body}</div>'
    )


def _pill(verdict: str) -> str:
    return f'<span class="pill {e(verdict)}">{e(verdict)}</span>'


def checkers_table(run: RunData) -> str:
    results = checker_results(run)
    if not results:
        return ""
    rows = [
        [
            e(r.get("checker", "?")),
            _pill(str(r.get("verdict", "unknown"))),
            e(r.get("summary", "")),
            str(len(r.get("anomalies") or [])),
        ]
        for r in results
    ]
    return table(["checker", "verdict", "summary", "anomalies"], rows, raw=True)


def anomaly_title(a: dict[str, Any]) -> str:
    for key in ("summary", "message", "description", "explanation"):
        if a.get(key):
            return str(a[key])
    kind = a.get("kind") or a.get("type")
    tid = anomaly_task(a)
    if tid:
        return f"task {tid}: {kind}" if kind else f"task {tid}"
    return str(kind or "anomaly")


def anomaly_task(a: dict[str, Any]) -> str | None:
    tid = a.get("task_id", a.get("task"))
    return str(tid) if isinstance(tid, str | int) else None


def missing_notice(run: RunData, expected: Mapping[str, str] | None = None) -> str:
    """The files a run should have and lacks; ``expected``: the workload's own files, each with
    what the page loses without it."""
    what = {
        "spec.json": "parameters unknown",
        "history.jsonl": "no ops: no timeline, no plots",
        "events.jsonl": "no system events: no sequence diagrams, no event excerpt",
        "final.json": "no final state",
        "results.json": "no verdict: the checkers never ran",
        **(expected or {}),
    }
    missing = [m for m in run.missing if m in what]
    # the loader lists the files it reads; a workload's own others are looked for here
    missing += [m for m in expected or {} if m not in missing and not (run.path / m).exists()]
    if not missing and not run.problems:
        return ""
    items = "".join(f"<li><code>{e(m)}</code> is missing — {e(what[m])}</li>" for m in missing)
    if run.problems:
        items += (
            f"<li>{len(run.problems)} unreadable line(s) were skipped — see Problems below</li>"
        )
    return (
        '<div class="notice" id="missing"><b>This run is incomplete.</b> The page shows what '
        f"exists.<ul>{items}</ul></div>"
    )


def _versions(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {x}" for k, x in v.items())
    return fmt_value(v)


def reproduce_command(spec: dict[str, Any]) -> tuple[str, bool]:
    """The command that reproduces the run, and whether spec.json carried it."""
    cmd = spec.get("command")
    if isinstance(cmd, list):
        return shlex.join(str(c) for c in cmd), True
    if isinstance(cmd, str) and cmd:
        return cmd, True
    if not workload_of(spec):
        return "", False
    parts = ["chaos", "run", workload_of(spec)]
    for key in ("nemesis", "seed", "solution"):
        if as_text(spec.get(key)):
            parts += [f"--{key}", as_text(spec[key])]
    return shlex.join(parts), False


def params_section(run: RunData) -> str:
    spec = run.spec
    if not spec:
        return "<p>spec.json is missing: the run's parameters are unknown.</p>"
    first = ("workload", "lab", "solution", "fault", "seed", "versions")
    # the fault as one line (nemesis, triggers, scenario, schedule), as `chaos ls` names it
    told = {"fault": faults_of(spec) or "none", **spec}
    shown = {k: (_versions(told[k]) if k == "versions" else told[k]) for k in first if k in told}
    shown.update(
        {
            k: v
            for k, v in spec.items()
            if k not in (*first, *FAULT_FIELDS, "command") and not isinstance(v, dict | list)
        }
    )
    options = spec.get("options")
    if isinstance(options, dict):  # the workload's own options, each a row of its own
        shown.update({f"-o {k}": v for k, v in options.items() if not isinstance(v, dict | list)})
    cmd, stored = reproduce_command(spec)
    out = kv_table(shown)
    if cmd:
        note = (
            ""
            if stored
            else ' <span class="muted">(rebuilt from the spec: it stored no command)</span>'
        )
        out += f"<h3>Reproduce{note}</h3><pre><code>{e(cmd)}</code></pre>"
    out += (
        f"<h3>Re-render this page</h3><pre><code>chaos report {e(shlex.quote(str(run.home)))}"
        "</code></pre>"
    )
    # The table above is the spec a person reads; the file itself is one click away for a tool.
    out += '<p class="muted">The whole spec: <a href="spec.json">spec.json</a>.</p>'
    return out


def plots_section(plots: list[Plot]) -> str:
    return "".join(
        f'<figure class="plot" id="plot-{e(p.name)}"><img alt="{e(p.title)}" src="{p.data_uri}">'
        f'<figcaption class="muted">{e(p.title)} — files: <a href="plots/{e(p.png_path.name)}">'
        f'PNG</a>, <a href="plots/{e(p.svg_path.name)}">SVG</a></figcaption></figure>'
        for p in plots
    )


def problems_section(run: RunData, limit: int = 50) -> str:
    if not run.problems:
        return ""
    items = "".join(f"<li><code>{e(p)}</code></li>" for p in run.problems[:limit])
    more = f"<li>… and {len(run.problems) - limit} more</li>" if len(run.problems) > limit else ""
    return f"<ul>{items}{more}</ul>"
