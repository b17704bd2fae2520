"""``chaos check FILE --model M``: check a history file offline.

    chaos check PATH --model M [--time-limit S] [--max-states N] [--json]

``PATH`` is a history file (chaos ``history.jsonl``, Jepsen ``history.edn`` — a vector or one map
per line —, a Jepsen log or ``history.txt``) or a run folder holding one. ``M`` is one of
``cas-register``, ``register``, ``kv``, ``set``, ``set-full``, ``queue``, ``total-queue``,
``counter``, ``unique-ids``. Lines that cannot be read are listed on stderr as
``FILE:LINE: ...`` and skipped; a skipped line other than a truncated last one turns a ``valid``
verdict into ``unknown`` (data was lost), a truncated last line (the writer died mid-line) does
not. Exit status: 0 valid, 1 invalid, 2 unknown, 3 bad input (no such file, nothing readable).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from chaos.checkers.linearizable import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT
from chaos.checkers.offline import MODEL_NAMES, NotAHistory, check_file
from chaos.checkers.verdict import CheckResult, Verdict, combine
from chaos.histories.safe_text import clean

__all__ = ["EXIT_BAD_INPUT", "check_file_command"]

EXIT_BAD_INPUT = 3
PROBLEMS_SHOWN = 20


def _echo_result(r: CheckResult) -> None:
    colour = {"valid": "green", "invalid": "red", "unknown": "yellow"}[r.verdict.value]
    click.echo(
        f"{click.style(r.verdict.value.upper(), fg=colour)} {clean(r.checker)}: {clean(r.summary)}"
    )
    for a in r.anomalies[:3]:
        text = json.dumps(a, default=str)
        click.echo(f"    {clean(text[:400])}{'...' if len(text) > 400 else ''}")
    if len(r.anomalies) > 3:
        click.echo(f"    ... {len(r.anomalies) - 3} more (use --json)")


@click.command("check")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "-m",
    type=click.Choice(MODEL_NAMES),
    required=True,
    help="What the history should satisfy.",
)
@click.option(
    "--time-limit",
    type=float,
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    help="Seconds the linearizability search may take before answering unknown.",
)
@click.option(
    "--max-states",
    type=int,
    default=DEFAULT_MAX_STATES,
    show_default=True,
    help="Configurations the linearizability search may remember before answering unknown.",
)
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON on stdout.")
def check_file_command(
    path: Path, model: str, time_limit: float, max_states: int, as_json: bool
) -> None:
    """Check a history file (JSONL, Jepsen EDN or log) against a model."""
    try:
        results, problems = check_file(path, model, time_limit=time_limit, max_states=max_states)
    except NotAHistory as e:
        click.secho(f"chaos: {e}", fg="red", err=True)
        sys.exit(EXIT_BAD_INPUT)
    for p in problems[:PROBLEMS_SHOWN]:
        click.echo(clean(p), err=True)
    if len(problems) > PROBLEMS_SHOWN:
        click.echo(f"... and {len(problems) - PROBLEMS_SHOWN} more unreadable lines", err=True)
    stats = next((r for r in results if r.checker == "stats"), None)
    if stats is not None and not stats.stats.get("count") and problems:
        click.secho(f"chaos: no readable op in {path}", fg="red", err=True)
        sys.exit(EXIT_BAD_INPUT)
    verdict = combine(results)
    lost = [p for p in problems if not p.truncated]
    if lost and verdict is Verdict.VALID:
        verdict = Verdict.UNKNOWN
    if as_json:
        doc = {
            "verdict": verdict.value,
            "exit_code": verdict.exit_code,
            "results": [r.to_json() for r in results],
            "problems": [
                {"path": p.path, "line": p.line, "message": p.message, "truncated": p.truncated}
                for p in problems
            ],
        }
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        for r in results:
            _echo_result(r)
        note = f" ({len(lost)} unreadable line(s) skipped)" if lost else ""
        click.echo(f"verdict: {verdict.value}{note}")
    sys.exit(verdict.exit_code)
