"""``chaos check FILE --model M``: check a history file offline.

The command, wired into ``chaos/cli.py`` as the ``--model`` branch of ``chaos check``::

    chaos check PATH --model M [--semantics knossos|porcupine] [--init VALUE]
        [--nil-read any|value] [--failed-cas absent|observed] [--independent/--no-independent]
        [--empty valid|unknown] [--time-limit S] [--max-states N] [--json]

``PATH`` is a history file (chaos ``history.jsonl``, Jepsen ``history.edn`` — a vector or one map
per line —, a Jepsen log or ``history.txt``) or a run folder holding one. ``M`` is one of
``cas-register``, ``register``, ``kv``, ``set``, ``set-full``, ``queue``, ``total-queue``,
``counter``, ``unique-ids``.

The exit status answers the question asked: it is the verdict of the model's own checkers
(the linearizability search, and the counting checker the model names), while ``stats`` and
``exceptions`` are printed as warnings and kept in ``--json``. Jepsen's ``stats`` checker fails a
test when some ``f`` never succeeded; that says the test exercised too little, not that the
history is wrong for the model, and a script asking "is this history linearizable?" must not
read it as "no". Lines that cannot be read are listed on stderr as ``FILE:LINE: ...`` and
skipped; a skipped line other than a truncated last one turns ``valid`` into ``unknown`` (data
was lost). Exit status: 0 valid, 1 invalid, 2 unknown, 3 bad input or arguments.

Only click and the standard library are imported at module level: ``chaos/cli.py`` reuses
:func:`model_options` to declare the same options, and must stay quick to start.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from chaos.exits import Exit
from chaos.histories.safe_text import clean  # the standard library only: quick to import

__all__ = ["check_file_command", "model_argv", "model_options", "parse_init"]

PROBLEMS_SHOWN = 20
DEFAULT_TIME_LIMIT = 60.0  # the same as chaos.checkers.linearizable's (kept light: no import)
DEFAULT_MAX_STATES = 5_000_000

F = TypeVar("F", bound=Callable[..., Any])

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
            "help": "[k v] values are (not) Jepsen independent [key value] tuples. Default: "
            "they are when every invoke is a pair and a read is invoked as [k nil].",
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
    """Add the model options (semantics, init, ...) to a click command."""
    for decls, kwargs in reversed(_OPTIONS):
        f = click.option(*decls, **kwargs)(f)
    return f


def model_argv(
    semantics: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
    independent: bool | None,
    empty: str | None,
) -> list[str]:
    """The command-line form of the model options, for forwarding them to this command."""
    argv: list[str] = []
    for opt, v in (
        ("--semantics", semantics),
        ("--init", init),
        ("--nil-read", nil_read),
        ("--failed-cas", failed_cas),
        ("--empty", empty),
    ):
        if v is not None:
            argv.append(f"{opt}={v}")
    if independent is not None:
        argv.append("--independent" if independent else "--no-independent")
    return argv


def parse_init(text: str) -> Any:
    """``--init``'s value: JSON first (``null``, ``{"a": 1}``), else EDN (``nil``, ``:a``).

    Raises ``ValueError`` saying so when it is neither.
    """
    from chaos.histories import edn  # start-up time: `chaos --help` imports this module

    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return edn.loads(text)
    except edn.EdnError as e:
        raise ValueError(f"--init {text!r} is neither a JSON nor an EDN value ({e})") from None


def _echo_result(r: Any, prefix: str = "") -> None:
    colour = {"valid": "green", "invalid": "red", "unknown": "yellow"}[r.verdict.value]
    click.echo(
        f"{prefix}{click.style(r.verdict.value.upper(), fg=colour)} "
        f"{clean(r.checker)}: {clean(r.summary)}"
    )
    for a in r.anomalies[:3]:
        text = json.dumps(a, default=str)
        click.echo(f"    {clean(text[:400])}{'...' if len(text) > 400 else ''}")
    if len(r.anomalies) > 3:
        click.echo(f"    ... {len(r.anomalies) - 3} more (use --json)")


def _semantics(
    model: str,
    preset: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
) -> Any:
    """The :class:`~chaos.checkers.semantics.Semantics` the options ask for; ``ValueError``
    with a message naming the option when they make no sense together."""
    from chaos.checkers.semantics import counter_start, semantics  # start-up time, as above

    if init is None:
        return semantics(preset, nil_read=nil_read, failed_cas=failed_cas)
    if model not in ("register", "cas-register", "kv", "counter"):
        raise ValueError(f"--init applies to register, cas-register, kv and counter, not {model}")
    sem = semantics(preset, init=parse_init(init), nil_read=nil_read, failed_cas=failed_cas)
    if model == "counter":
        try:
            counter_start(sem)
        except ValueError as e:
            raise ValueError(f"--init: {e}") from None
    return sem


@click.command("check")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "-m",
    type=click.Choice(
        [
            "cas-register",
            "register",
            "kv",
            "set",
            "set-full",
            "queue",
            "total-queue",
            "counter",
            "unique-ids",
        ]
    ),
    required=True,
    help="What the history should satisfy.",
)
@model_options
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIME_LIMIT,
    show_default=True,
    help="Seconds the linearizability search may take before answering unknown.",
)
@click.option(
    "--max-states",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_STATES,
    show_default=True,
    help="Configurations the linearizability search may remember before answering unknown.",
)
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON on stdout.")
def check_file_command(
    path: Path,
    model: str,
    semantics: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
    independent: bool | None,
    empty: str | None,
    time_limit: float,
    max_states: int,
    as_json: bool,
) -> None:
    """Check a history file (JSONL, Jepsen EDN or log) against a model."""
    # start-up time: chaos.cli imports this module for every command, the checkers are for one
    from chaos.checkers.offline import NotAHistory, check_file, model_checkers
    from chaos.checkers.verdict import Verdict, combine

    try:
        sem = _semantics(model, semantics, init, nil_read, failed_cas)
    except ValueError as e:
        click.secho(f"chaos: {clean(e)}", fg="red", err=True)
        sys.exit(Exit.USAGE)
    try:
        results, problems = check_file(
            path,
            model,
            time_limit=time_limit,
            max_states=max_states,
            sem=sem,
            independent=independent,
            # one default for an empty history, the API's (unknown, saying why)
            **({"empty": Verdict(empty)} if empty else {}),
        )
    except NotAHistory as e:
        click.secho(f"chaos: {clean(e)}", fg="red", err=True)
        sys.exit(Exit.USAGE)
    for p in problems[:PROBLEMS_SHOWN]:
        click.echo(clean(p), err=True)
    if len(problems) > PROBLEMS_SHOWN:
        click.echo(f"... and {len(problems) - PROBLEMS_SHOWN} more unreadable lines", err=True)
    stats = next((r for r in results if r.checker == "stats"), None)
    if stats is not None and not stats.stats.get("count") and problems:
        click.secho(f"chaos: no readable op in {clean(path)}", fg="red", err=True)
        sys.exit(Exit.USAGE)
    # A model checker that could not interpret the history (an op the model has no meaning
    # for, a cas without [expected new]) is bad input, not an unknown verdict.
    deciding = model_checkers(model)
    main = [r for r in results if r.checker in deciding]
    side = [r for r in results if r.checker not in deciding]
    cannot = next((r for r in main if r.summary.startswith("cannot check: ")), None)
    if cannot is not None:
        why = clean(cannot.summary[len("cannot check: ") :])
        click.secho(f"chaos: {clean(path)}: {why}", fg="red", err=True)
        sys.exit(Exit.USAGE)
    verdict = combine(main)
    lost = [p for p in problems if not p.truncated]
    if lost and verdict is Verdict.VALID:
        verdict = Verdict.UNKNOWN
    warnings = [
        f"{r.checker} is {r.verdict.value}: {r.summary}" for r in side if r.verdict.value != "valid"
    ]
    warnings += [f"{r.checker}: {r.summary}" for r in main if r.stats.get("empty")]
    uses_model = any(r.checker.startswith("linearizable-") for r in main)
    if as_json:
        doc: dict[str, Any] = {
            "verdict": verdict.value,
            "exit_code": verdict.exit_code,
            "deciding": list(deciding),
            "all_checkers_verdict": combine(results).value,
            "warnings": warnings,
            "results": [r.to_json() for r in results],
            "problems": [
                {"path": p.path, "line": p.line, "message": p.message, "truncated": p.truncated}
                for p in problems
            ],
        }
        if uses_model or model == "counter":
            doc["semantics"] = sem.to_json()
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        if uses_model:
            click.echo(f"semantics: {clean(sem.describe())}")
        for r in main:
            _echo_result(r)
        for r in side:
            if r.verdict.value == "valid":
                _echo_result(r)
        for w in warnings:
            click.secho(f"warning: {clean(w)}", fg="yellow")
        note = f" ({len(lost)} unreadable line(s) skipped)" if lost else ""
        click.echo(f"verdict: {verdict.value}{note}")
    sys.exit(verdict.exit_code)
