"""``chaos check FILE --model M``: check a history file offline.

The command, wired into ``chaos/cli.py`` as the ``--model`` branch of ``chaos check``::

    chaos check PATH --model M [--semantics knossos|porcupine] [--init VALUE]
        [--nil-read any|value] [--failed-cas absent|observed] [--independent/--no-independent]
        [--empty valid|unknown] [--search-timeout S] [--max-states N] [--json]

``PATH`` is a history file (chaos ``history.jsonl``, Jepsen ``history.edn`` — a vector or one map
per line —, a Jepsen log or ``history.txt``) or a run folder holding one. ``M`` is one of
``cas-register``, ``register``, ``kv``, ``set``, ``set-full``, ``queue``, ``total-queue``,
``counter``, ``unique-ids``.

The exit status answers the question asked: it is the verdict of the model's own checkers
(the linearizability search, and the counting checker the model names), while ``stats`` and
``exceptions`` are printed as warnings and kept in ``--json``. Jepsen's ``stats`` checker fails a
test when some ``f`` never succeeded; that says the test exercised too little, not that the
history is wrong for the model, and a script asking "is this history linearizable?" must not
read it as "no". A malformed history — a form that cannot be read, an op map that is not an op,
a completion with no invocation by its process — is listed on stderr as ``FILE:LINE: ...`` and
refused (exit 3): a verdict on what could be read is about another history. ``--lenient`` checks
the rest instead, and then the verdict is at best ``unknown`` (the lost ops could be what made it
valid, or invalid). A cut-off last line (the writer died) is only a warning: it can only have been
the last event. Keys are split only when asked (``--independent``, or ``key`` fields); a history
that looks keyed gets a note on stderr (and in ``--json``'s ``notes``). Exit status: 0 valid, 1
invalid, 2 unknown, 3 bad input or arguments.

Only click and the standard library are imported at module level: ``chaos/cli.py`` reuses
:func:`model_options` to declare the same options, and must stay quick to start.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from chaos.checkers.budget import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT
from chaos.checkers.elle.options import OPTIONS as VERSION_ORDER_OPTIONS  # click + stdlib only
from chaos.deprecation import old_name
from chaos.exits import Exit
from chaos.histories.safe_text import clean  # the standard library only: quick to import

if TYPE_CHECKING:  # annotations only: this module stays quick to import
    from chaos.checkers.verdict import CheckResult, Verdict

__all__ = [
    "MODELS",
    "ModelCheck",
    "check_file_command",
    "check_history",
    "model_argv",
    "model_options",
    "parse_init",
]

PROBLEMS_SHOWN = 20

F = TypeVar("F", bound=Callable[..., Any])

# what --model names (chaos check -m, and this command)
MODELS = (
    "cas-register",
    "register",
    "kv",
    "set",
    "set-full",
    "queue",
    "total-queue",
    "counter",
    "unique-ids",
    "list-append",
    "rw-register",
)

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
        f = click.option(o.flag, o.name, **o.click_kwargs())(f)
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
    lenient: bool = False,
    **version_order: Any,
) -> list[str]:
    """The command-line form of the model options, for forwarding them to this command
    (``version_order``: the values of the version-order options, by name)."""
    argv = _version_order_argv(version_order)
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
    if lenient:
        argv.append("--lenient")
    return argv


def _version_order_argv(given: dict[str, Any]) -> list[str]:
    """The version-order options given (a flag set, a file named), as command-line words."""
    out: list[str] = []
    for o in VERSION_ORDER_OPTIONS:
        v = given.pop(o.name, None)
        if v:
            out.append(o.flag if o.is_flag else f"{o.flag}={v}")
    if given:
        raise TypeError(f"unknown model options: {', '.join(given)}")
    return out


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


TXN_MODELS = ("list-append", "rw-register")


def _check_txn_file(
    path: Path, model: str, other_opts: list[str], time_limit: float, asked: ModelCheck
) -> None:
    """``--model list-append|rw-register``: Elle-style transactional checking; exits."""
    from chaos.checkers.elle import DEFAULT_CONSISTENCY, NoHistory, TxnInputError, check_file
    from chaos.checkers.elle.loading import read_commit_order
    from chaos.checkers.elle.options import VersionOrder
    from chaos.checkers.verdict import Verdict

    def bad(msg: object) -> None:
        click.secho(f"chaos: {clean(msg)}", fg="red", err=True)
        sys.exit(Exit.USAGE)

    if other_opts:
        bad(f"{' '.join(other_opts)}: not with --model {model}")
    try:
        commits = None if asked.version_order is None else read_commit_order(asked.version_order)
        order = VersionOrder(
            sequential_keys=asked.sequential_keys,
            linearizable_keys=asked.linearizable_keys,
            wfr_keys=asked.wfr_keys,
            transaction_order=commits,
        )
        results, problems = check_file(
            path, model, asked.consistency or DEFAULT_CONSISTENCY, time_limit=time_limit,
            order=order,
        )  # fmt: skip
    except (NoHistory, TxnInputError, ValueError) as e:
        bad(e)
    for p in problems[:PROBLEMS_SHOWN]:
        click.echo(clean(p), err=True)
    lost = [p for p in problems if not p.truncated]
    r = results[0]
    if problems and not any(r.stats.get("txns", {}).values()) and not r.stats.get("skipped_ops"):
        bad(f"no readable op in {path}")
    verdict = r.verdict
    if lost and verdict is Verdict.VALID:
        verdict = Verdict.UNKNOWN
    _write_artefacts(asked, results)
    if asked.as_json:
        doc = {
            "verdict": verdict.value,
            "exit_code": verdict.exit_code,
            "deciding": [r.checker],
            "results": [x.to_json() for x in results],
            "problems": [
                {"path": p.path, "line": p.line, "message": p.message, "truncated": p.truncated}
                for p in problems
            ],
        }
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        _print_txn_result(r, verdict, len(lost))
    sys.exit(verdict.exit_code)


def _print_txn_result(r: CheckResult, verdict: Verdict, lost: int) -> None:
    """The transactional check's result as text: the checker's line, its first anomalies, the
    verdict (``lost``: unreadable lines skipped)."""
    colour = {"valid": "green", "invalid": "red", "unknown": "yellow"}[r.verdict.value]
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
    semantics: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
    independent: bool | None,
    empty: str | None,
    consistency: str | None,
    lenient: bool,
    time_limit: float,
    max_states: int,
    as_json: bool,
    **version_order: Any,
) -> None:
    """Check a history file (JSONL, Jepsen EDN or log) against a model."""
    asked = ModelCheck(
        **version_order,
        model=model,
        semantics=semantics,
        init=init,
        nil_read=nil_read,
        failed_cas=failed_cas,
        independent=independent,
        empty=empty,
        lenient=lenient,
        consistency=consistency,
        time_limit=time_limit,
        max_states=max_states,
        as_json=as_json,
    )
    check_history(path, asked)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCheck:
    """What a history file is checked against: ``--model`` and its options, as parsed (None: the
    option was not given)."""

    model: str
    semantics: str | None = None
    init: str | None = None
    nil_read: str | None = None
    failed_cas: str | None = None
    independent: bool | None = None
    empty: str | None = None
    lenient: bool = False
    consistency: str | None = None
    # rw-register's version-order assumptions (chaos.checkers.elle.options; none by default)
    sequential_keys: bool = False
    linearizable_keys: bool = False
    wfr_keys: bool = False
    version_order: Path | None = None  # a file holding the database's commit order
    time_limit: float | None = None  # None: the budget's default
    max_states: int | None = None  # None: the budget's default
    as_json: bool = False
    # ``--out DIR``: writes the results' pictures and returns the files (the report layer's)
    artefacts: Callable[[Sequence[CheckResult]], Sequence[Path]] | None = None


def _write_artefacts(asked: ModelCheck, results: Sequence[CheckResult]) -> None:
    """The pictures ``--out`` asked for; a directory that cannot be written is bad input."""
    if asked.artefacts is None:
        return
    try:
        files = asked.artefacts(results)
    except OSError as e:
        _refuse(f"--out: cannot write: {e.strerror or e}")
    if files:
        click.echo(f"wrote {clean(files[0])} and {len(files) - 1} more file(s)", err=True)


def check_history(path: Path, asked: ModelCheck) -> NoReturn:
    """Check the history at ``path`` as ``asked``, print the answer and exit with its status
    (0 valid, 1 invalid, 2 unknown, 3 bad input or options). ``chaos check --model`` and this
    module's command both call it with what they parsed."""
    model = asked.model
    time_limit = DEFAULT_TIME_LIMIT if asked.time_limit is None else asked.time_limit
    max_states = DEFAULT_MAX_STATES if asked.max_states is None else asked.max_states
    opts = (asked.semantics, asked.init, asked.nil_read, asked.failed_cas)
    version_order = _version_order_argv(
        {o.name: getattr(asked, o.name) for o in VERSION_ORDER_OPTIONS}
    )
    if version_order and model != "rw-register":
        # Elle's options are rw-register's: a list's reads already show its whole version order
        _refuse(f"{' '.join(version_order)}: applies to rw-register, not {model}")
    if model in TXN_MODELS:
        given = model_argv(*opts, asked.independent, asked.empty)
        _check_txn_file(path, model, given, time_limit, asked)
    if asked.consistency is not None:
        _refuse(f"--consistency applies to list-append and rw-register, not {model}")
    # start-up time: chaos.cli imports this module for every command, the checkers are for one
    from chaos.checkers.offline import check_file, lost, model_checkers
    from chaos.checkers.verdict import Verdict, combine

    try:
        sem = _semantics(model, *opts)
    except ValueError as e:
        _refuse(clean(e))
    with _not_a_history():
        results, problems = check_file(
            path,
            model,
            time_limit=time_limit,
            max_states=max_states,
            sem=sem,
            independent=asked.independent,
            # one default for an empty history, the API's (unknown, saying why)
            **({"empty": Verdict(asked.empty)} if asked.empty else {}),
            strict=not asked.lenient,
        )
    _show_problems(problems)
    dropped = lost(problems)
    _refuse_unreadable(path, results, problems, len(dropped), asked.lenient)
    deciding = model_checkers(model)
    main = [r for r in results if r.checker in deciding]
    _refuse_uninterpretable(path, main)
    verdict = combine(main)
    if dropped and verdict in (Verdict.VALID, Verdict.INVALID):
        # The lost ops could be what made it valid, or invalid: neither is this history's.
        verdict = Verdict.UNKNOWN
    _write_artefacts(asked, results)
    _say(model, sem, results, deciding, verdict, problems, len(dropped), as_json=asked.as_json)
    sys.exit(verdict.exit_code)


def _say(
    model: str,
    sem: Any,
    results: list[CheckResult],
    deciding: Sequence[str],
    verdict: Verdict,
    problems: Sequence[Any],
    dropped: int,
    *,
    as_json: bool,
) -> None:
    """The model check's answer: notes on stderr, then JSON or text on stdout."""
    from chaos.checkers.verdict import combine

    main = [r for r in results if r.checker in deciding]
    side = [r for r in results if r.checker not in deciding]
    notes = [str(r.stats["note"]) for r in main if r.stats.get("note")]
    for n in notes:
        click.secho(f"note: {clean(n)}", fg="yellow", err=True)
    warnings = _warnings(main, side)
    uses_model = any(r.checker.startswith("linearizable-") for r in main)
    shown_sem = sem if uses_model or (as_json and model == "counter") else None
    if as_json:
        doc = {
            "verdict": verdict.value,
            "exit_code": verdict.exit_code,
            "deciding": list(deciding),
            "all_checkers_verdict": combine(results).value,
            "warnings": warnings,
            "notes": notes,
        }
        _print_json(doc, results, problems, shown_sem)
    else:
        _print_model_result(main, side, warnings, notes, shown_sem, verdict, dropped)


def _refuse_unreadable(
    path: Path, results: list[CheckResult], problems: Sequence[Any], dropped: int, lenient: bool
) -> None:
    """Refuse a history with no readable op, or with unreadable lines unless ``lenient``."""
    stats = next((r for r in results if r.checker == "stats"), None)
    if stats is not None and not stats.stats.get("count") and problems:
        _refuse(f"no readable op in {clean(path)}")
    if dropped and not lenient:
        _refuse(
            f"{clean(path)} is not a well-formed history ({dropped} problem(s) "
            "above); a verdict on what could be read would be about another history. Fix it, "
            "or pass --lenient to check the rest (the verdict is then at best unknown)."
        )


def _warnings(main: list[CheckResult], side: list[CheckResult]) -> list[str]:
    """What does not decide the verdict but is worth a look: a side checker that did not pass
    (Jepsen's stats: some f never succeeded), a deciding one that had nothing to check."""
    out = [
        f"{r.checker} is {r.verdict.value}: {r.summary}" for r in side if r.verdict.value != "valid"
    ]
    out += [f"{r.checker}: {r.summary}" for r in main if r.stats.get("empty")]
    return out


def _refuse_uninterpretable(path: Path, main: list[CheckResult]) -> None:
    """A model checker that could not interpret the history (an op the model has no meaning
    for, a cas without [expected new]) is bad input, not an unknown verdict."""
    cannot = next((r for r in main if r.summary.startswith("cannot check: ")), None)
    if cannot is not None:
        _refuse(f"{clean(path)}: {clean(cannot.summary[len('cannot check: ') :])}")


def _print_json(
    doc: dict[str, Any], results: list[CheckResult], problems: Sequence[Any], sem: Any
) -> None:
    """``doc`` with every result and problem (and the semantics, when given) as JSON."""
    doc = {
        **doc,
        "results": [r.to_json() for r in results],
        "problems": [
            {"path": p.path, "line": p.line, "message": p.message, "truncated": p.truncated}
            for p in problems
        ],
    }
    if sem is not None:
        doc["semantics"] = sem.to_json()
    click.echo(json.dumps(doc, indent=2, default=str))


@contextlib.contextmanager
def _not_a_history() -> Iterator[None]:
    """A file that is no history at all is bad input (exit 3)."""
    from chaos.checkers.offline import NotAHistory

    try:
        yield
    except NotAHistory as e:
        _refuse(clean(e))


def _refuse(message: str) -> NoReturn:
    """Bad input: one red line on stderr, exit 3."""
    click.secho(f"chaos: {message}", fg="red", err=True)
    sys.exit(Exit.USAGE)


def _show_problems(problems: Sequence[Any]) -> None:
    for p in problems[:PROBLEMS_SHOWN]:
        click.echo(clean(p), err=True)
    if len(problems) > PROBLEMS_SHOWN:
        click.echo(f"... and {len(problems) - PROBLEMS_SHOWN} more problems", err=True)


def _print_model_result(
    main: list[CheckResult],
    side: list[CheckResult],
    warnings: list[str],
    notes: list[str],
    sem: Any,
    verdict: Verdict,
    dropped: int,
) -> None:
    """The model check as text: the semantics (when a model was searched), the deciding
    checkers, the side checkers that passed, warnings, notes, the verdict."""
    if sem is not None:
        click.echo(f"semantics: {clean(sem.describe())}")
    for r in main:
        _echo_result(r)
    for r in side:
        if r.verdict.value == "valid":
            _echo_result(r)
    for w in warnings:
        click.secho(f"warning: {clean(w)}", fg="yellow")
    for n in notes:
        click.secho(f"note: {clean(n)}", fg="yellow")
    skipped = f" ({dropped} problem(s) skipped with --lenient)" if dropped else ""
    click.echo(f"verdict: {verdict.value}{skipped}")
