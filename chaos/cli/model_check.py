"""``chaos check FILE --model M``: a history file checked offline, its answer printed.

    chaos check PATH --model M [--semantics knossos|porcupine] [--init VALUE]
        [--nil-read any|value] [--failed-cas absent|observed] [--independent/--no-independent]
        [--empty valid|unknown] [--search-timeout S] [--max-states N] [--json]

The check is chaos.checkers.history_file's, a function that returns; here its answer is printed
and becomes the exit status: 0 valid, 1 invalid, 2 unknown, 3 bad input or arguments. ``stats``
and ``exceptions`` are printed as warnings and kept in ``--json``. A malformed history is listed
on stderr as ``FILE:LINE: ...`` and refused (exit 3) unless ``--lenient``; a history that looks
keyed gets a note on stderr (and in ``--json``'s ``notes``).

``check_file_command`` is this check as a command of its own; ``chaos check`` declares the same
options with :func:`model_options`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from chaos.checkers.budget import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT
from chaos.checkers.elle.options import OPTIONS as VERSION_ORDER_OPTIONS  # standard library only
from chaos.checkers.history_file import (
    MODELS,
    TXN_MODELS,
    Answer,
    ModelCheck,
    Refused,
    check_model,
)
from chaos.cli.deprecation import old_name
from chaos.cli.errors import fail
from chaos.cli.output import VERDICT_COLOUR
from chaos.histories.safe_text import clean  # the standard library only: quick to import

if TYPE_CHECKING:  # annotations only: this module stays quick to import
    from chaos.checkers.verdict import CheckResult, Verdict

__all__ = ["Pages", "check_file_command", "check_history", "model_options"]

PROBLEMS_SHOWN = 20

F = TypeVar("F", bound=Callable[..., Any])
# ``--out DIR``: writes the results' pictures and returns the files (the report layer's)
Pages = Callable[[Sequence["CheckResult"]], Sequence[Path]]

_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (
        ("--semantics",),
        {
            "type": click.Choice(["porcupine", "knossos"]),
            "default": None,
            "help": "Read the history as Porcupine (default: register starts absent, a nil "
            "read means absent, a failed cas is an observed compare failure) or Knossos does "
            "(starts at 0, a nil read matches anything, a failed cas did not happen).",
        },
    ),
    (
        ("--init",),
        {
            "default": None,
            "metavar": "VALUE",
            "help": "Starting value (an EDN or JSON literal) of the register, of each kv key, "
            "or of the counter.",
        },
    ),
    (
        ("--nil-read",),
        {
            "type": click.Choice(["any", "value"]),
            "default": None,
            "help": "A read of nil matches any state (Knossos) or means the value nil/absent.",
        },
    ),
    (
        ("--failed-cas",),
        {
            "type": click.Choice(["absent", "observed"]),
            "default": None,
            "help": "A :fail cas did not happen (Knossos) or observed a failed compare.",
        },
    ),
    (
        ("--independent/--no-independent",),
        {
            "default": None,
            "help": "[k v] values are (not) Jepsen independent [key value] tuples, checked "
            "key by key. Default: not; a history that looks keyed gets a note saying so.",
        },
    ),
    (
        ("--lenient",),
        {
            "is_flag": True,
            "default": False,
            "help": "Check what could be read of a malformed history (unreadable forms, "
            "completions with no invocation) instead of refusing it (exit 3); the problems "
            "are warnings and the verdict is at best unknown.",
        },
    ),
    (
        ("--empty",),
        {
            "type": click.Choice(["valid", "unknown"]),
            "default": None,
            "help": "Verdict for a history with nothing to linearize, printed with a warning "
            "(default: unknown, the history decides nothing; valid is what Knossos and "
            "Porcupine say).",
        },
    ),
]


def model_options(f: F) -> F:
    """Add the model options (semantics, init, ..., rw-register's version-order assumptions)
    to a click command."""
    for o in reversed(VERSION_ORDER_OPTIONS):
        kwargs: dict[str, Any] = {"default": False, "is_flag": True}
        if not o.is_flag:
            kwargs = {"type": click.Path(path_type=Path, dir_okay=False), "default": None,
                      "metavar": "FILE"}  # fmt: skip
        f = click.option(o.flag, o.name, help=o.help, **kwargs)(f)
    for decls, kwargs in reversed(_OPTIONS):
        f = click.option(*decls, **kwargs)(f)
    return f


def check_history(
    path: Path, asked: ModelCheck, *, as_json: bool = False, pages: Pages | None = None
) -> NoReturn:
    """Check the history at ``path`` as ``asked``, print the answer and exit with its status
    (0 valid, 1 invalid, 2 unknown, 3 bad input or options). ``chaos check --model`` and
    :data:`check_file_command` both call it with what they parsed."""
    txns = asked.model in TXN_MODELS
    try:
        answer = check_model(path, asked)
    except Refused as e:
        _show_problems(e.problems, txns)
        fail(clean(str(e)))
    _show_problems(answer.problems, txns)
    _write_pages(pages, answer.results)
    if txns:
        _say_txns(answer, as_json=as_json)
    else:
        _say(answer, as_json=as_json)
    sys.exit(answer.verdict.exit_code)


def _write_pages(pages: Pages | None, results: Sequence[CheckResult]) -> None:
    """The pictures ``--out`` asked for; a directory that cannot be written is bad input."""
    if pages is None:
        return
    try:
        files = pages(results)
    except OSError as e:
        fail(f"--out: cannot write: {e.strerror or e}")
    if files:
        click.echo(f"wrote {clean(files[0])} and {len(files) - 1} more file(s)", err=True)


def _show_problems(problems: Sequence[Any], txns: bool) -> None:
    """The malformed lines, on stderr: the first :data:`PROBLEMS_SHOWN`, and how many more."""
    for p in problems[:PROBLEMS_SHOWN]:
        click.echo(clean(p), err=True)
    if len(problems) > PROBLEMS_SHOWN and not txns:
        click.echo(f"... and {len(problems) - PROBLEMS_SHOWN} more problems", err=True)


def _problems_json(problems: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {"path": p.path, "line": p.line, "message": p.message, "truncated": p.truncated}
        for p in problems
    ]


def _say_txns(answer: Answer, *, as_json: bool) -> None:
    """The transactional check's answer, as JSON or text."""
    if as_json:
        doc = {
            "verdict": answer.verdict.value,
            "exit_code": answer.verdict.exit_code,
            "deciding": list(answer.deciding),
            "results": [x.to_json() for x in answer.results],
            "problems": _problems_json(answer.problems),
        }
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        _print_txn_result(answer.results[0], answer.verdict, answer.dropped)


def _print_txn_result(r: CheckResult, verdict: Verdict, lost: int) -> None:
    """The transactional check's result as text: the checker's line, its first anomalies, the
    verdict (``lost``: unreadable lines skipped)."""
    colour = VERDICT_COLOUR[r.verdict.value]
    click.echo(f"{click.style(r.verdict.value.upper(), fg=colour)} {r.checker}: {clean(r.summary)}")
    shown = 0
    for a in r.anomalies:
        if shown >= 5:
            break
        mark = "" if a.get("forbidden") else " (allowed)"
        click.echo(f"  {clean(a['type'])}{mark}: {clean(a.get('explanation', ''))}")
        shown += 1
    if len(r.anomalies) > shown:
        click.echo(f"  ... {len(r.anomalies) - shown} more (use --json)")
    note = f" ({lost} unreadable line(s) skipped)" if lost else ""
    click.echo(f"verdict: {verdict.value}{note}")


def _echo_result(r: Any, prefix: str = "") -> None:
    colour = VERDICT_COLOUR[r.verdict.value]
    click.echo(
        f"{prefix}{click.style(r.verdict.value.upper(), fg=colour)} "
        f"{clean(r.checker)}: {clean(r.summary)}"
    )
    for a in r.anomalies[:3]:
        text = json.dumps(a, default=str)
        click.echo(f"    {clean(text[:400])}{'...' if len(text) > 400 else ''}")
    if len(r.anomalies) > 3:
        click.echo(f"    ... {len(r.anomalies) - 3} more (use --json)")


def _say(answer: Answer, *, as_json: bool) -> None:
    """The model check's answer: notes on stderr, then JSON or text on stdout."""
    from chaos.checkers.verdict import combine

    notes = answer.notes()
    for n in notes:
        click.secho(f"note: {clean(n)}", fg="yellow", err=True)
    warnings = answer.warnings()
    uses_model = any(r.checker.startswith("linearizable-") for r in answer.main)
    sem = answer.sem
    shown_sem = sem if uses_model or (as_json and answer.model == "counter") else None
    if as_json:
        doc = {
            "verdict": answer.verdict.value,
            "exit_code": answer.verdict.exit_code,
            "deciding": list(answer.deciding),
            "all_checkers_verdict": combine(answer.results).value,
            "warnings": warnings,
            "notes": notes,
        }
        _print_json(doc, answer.results, answer.problems, shown_sem)
    else:
        _print_model_result(answer, warnings, notes, shown_sem)


@click.command(
    "check",
    epilog="\b\nExamples:\n  chaos check history.edn --model cas-register --search-timeout 120\n"
    "  chaos check history.jsonl --model total-queue --json",
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "-m",
    type=click.Choice(MODELS),
    required=True,
    help="What the history should satisfy.",
)
@model_options
@click.option(
    "--consistency",
    default=None,
    metavar="MODEL",
    help="With --model list-append or rw-register: the consistency model the transactions "
    "should satisfy, any of Elle's (read-committed, repeatable-read, snapshot-isolation, "
    "strong-snapshot-isolation, read-atomic, serializable, strict-serializable, ...; default "
    "strict-serializable).",
)
@click.option(
    "--search-timeout",
    "time_limit",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    help="Seconds (> 0) the linearizability search may take before answering unknown.",
)
@old_name("--time-limit", new="--search-timeout")
@click.option(
    "--max-states",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_STATES,
    show_default=True,
    help="Configurations (>= 1) the linearizability search may remember before answering unknown.",
)
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON on stdout.")
def check_file_command(
    path: Path,
    model: str,
    consistency: str | None,
    time_limit: float,
    max_states: int,
    as_json: bool,
    **model_opts: Any,
) -> None:
    """Check a history file (JSONL, Jepsen EDN or log) against a model."""
    asked = ModelCheck(
        model=model,
        **model_opts,
        consistency=consistency,
        time_limit=time_limit,
        max_states=max_states,
    )
    check_history(path, asked, as_json=as_json)


def _print_json(
    doc: dict[str, Any], results: list[CheckResult], problems: Sequence[Any], sem: Any
) -> None:
    """``doc`` with every result and problem (and the semantics, when given) as JSON."""
    doc = {
        **doc,
        "results": [r.to_json() for r in results],
        "problems": _problems_json(problems),
    }
    if sem is not None:
        doc["semantics"] = sem.to_json()
    click.echo(json.dumps(doc, indent=2, default=str))


def _print_model_result(answer: Answer, warnings: list[str], notes: list[str], sem: Any) -> None:
    """The model check as text: the semantics (when a model was searched), the deciding
    checkers, the side checkers that passed, warnings, notes, the verdict."""
    if sem is not None:
        click.echo(f"semantics: {clean(sem.describe())}")
    for r in answer.main:
        _echo_result(r)
    for r in answer.side:
        if r.verdict.value == "valid":
            _echo_result(r)
    for w in warnings:
        click.secho(f"warning: {clean(w)}", fg="yellow")
    for n in notes:
        click.secho(f"note: {clean(n)}", fg="yellow")
    skipped = f" ({answer.dropped} problem(s) skipped with --lenient)" if answer.dropped else ""
    click.echo(f"verdict: {answer.verdict.value}{skipped}")
