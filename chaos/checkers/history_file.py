"""A history file checked against a model (``chaos check FILE --model M``): a function that
returns the answer, or raises :class:`Refused` for bad input; the command line prints it and
exits with the verdict's status.

``PATH`` is a history file (chaos ``history.jsonl``, Jepsen ``history.edn`` — a vector or one map
per line —, a Jepsen log or ``history.txt``) or a run folder holding one; the model is one of
:data:`MODELS`.

The verdict answers the question asked: it is the verdict of the model's own checkers (the
linearizability search, and the counting checker the model names), while ``stats`` and
``exceptions`` are side results, warnings. Jepsen's ``stats`` checker fails a test when some ``f``
never succeeded; that says the test exercised too little, not that the history is wrong for the
model, and a script asking "is this history linearizable?" must not read it as "no". A malformed
history — a form that cannot be read, an op map that is not an op, a completion with no
invocation by its process — is refused: a verdict on what could be read is about another
history. ``lenient`` checks the rest instead, and then the verdict is at best unknown (the lost
ops could be what made it valid, or invalid). A cut-off last line (the writer died) is only a
problem shown: it can only have been the last event. Keys are split only when asked
(``independent``, or ``key`` fields).

Only the standard library is imported at module level: ``chaos check``'s command imports this
module, and every command must stay quick to start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chaos.checkers.budget import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT

if TYPE_CHECKING:  # annotations only: this module stays quick to import
    from chaos.checkers.semantics import Semantics
    from chaos.checkers.verdict import CheckResult, Verdict
    from chaos.histories.ops import JSONValue

__all__ = [
    "MODELS",
    "TXN_MODELS",
    "Answer",
    "ModelCheck",
    "Refused",
    "check_model",
    "model_argv",
    "parse_init",
]

# what --model names
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
# the models checked Elle's way, as transactions
TXN_MODELS = ("list-append", "rw-register")


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


class Refused(ValueError):
    """Bad input or options: the message says why; ``problems``: the malformed lines found
    before the refusal (shown with it)."""

    def __init__(self, message: str, problems: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A history file's check. ``deciding``: the checkers whose verdicts make ``verdict``;
    ``problems``: what could not be read (``dropped`` of them lost ops); ``sem``: the semantics
    the model was searched under (None for a transactional model)."""

    model: str
    verdict: Verdict
    results: list[CheckResult]
    deciding: tuple[str, ...]
    problems: Sequence[Any]
    dropped: int
    sem: Semantics | None = None

    @property
    def main(self) -> list[CheckResult]:
        return [r for r in self.results if r.checker in self.deciding]

    @property
    def side(self) -> list[CheckResult]:
        return [r for r in self.results if r.checker not in self.deciding]

    def warnings(self) -> list[str]:
        """What does not decide the verdict but is worth a look: a side checker that did not
        pass (Jepsen's stats: some f never succeeded), a deciding one that had nothing to
        check."""
        out = [
            f"{r.checker} is {r.verdict.value}: {r.summary}"
            for r in self.side
            if r.verdict.value != "valid"
        ]
        out += [f"{r.checker}: {r.summary}" for r in self.main if r.stats.get("empty")]
        return out

    def notes(self) -> list[str]:
        return [str(r.stats["note"]) for r in self.main if r.stats.get("note")]


def model_argv(
    semantics: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
    independent: bool | None,
    empty: str | None,
    lenient: bool = False,
    **version_order: object,
) -> list[str]:
    """The command-line form of the model options (to name them in a refusal, or forward them;
    ``version_order``: the values of rw-register's version-order options, by name)."""
    argv = version_order_argv(version_order)
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


def version_order_argv(given: Mapping[str, object]) -> list[str]:
    """The version-order options given (a flag set, a file named), as command-line words."""
    from chaos.checkers.elle.options import OPTIONS

    given = dict(given)
    out: list[str] = []
    for o in OPTIONS:
        v = given.pop(o.name, None)
        if v:
            out.append(o.flag if o.is_flag else f"{o.flag}={v}")
    if given:
        raise TypeError(f"unknown model options: {', '.join(given)}")
    return out


def parse_init(text: str) -> JSONValue:
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


def check_model(path: Path, asked: ModelCheck) -> Answer:
    """Check the history at ``path`` as ``asked``; :class:`Refused` for bad input or options."""
    model = asked.model
    time_limit = DEFAULT_TIME_LIMIT if asked.time_limit is None else asked.time_limit
    max_states = DEFAULT_MAX_STATES if asked.max_states is None else asked.max_states
    opts = (asked.semantics, asked.init, asked.nil_read, asked.failed_cas)
    from chaos.checkers.elle.options import OPTIONS as VERSION_ORDER

    assumed = version_order_argv({o.name: getattr(asked, o.name) for o in VERSION_ORDER})
    if assumed and model != "rw-register":
        # Elle's options are rw-register's: a list's reads already show its whole version order
        raise Refused(f"{' '.join(assumed)}: applies to rw-register, not {model}")
    if model in TXN_MODELS:
        given = model_argv(*opts, asked.independent, asked.empty)
        return _check_txns(path, model, given, time_limit, asked)
    if asked.consistency is not None:
        raise Refused(f"--consistency applies to list-append and rw-register, not {model}")
    # start-up time: the checkers are for this one command
    from chaos.checkers.offline import NotAHistory, check_file, lost, model_checkers
    from chaos.checkers.verdict import Verdict, combine

    try:
        sem = _semantics(model, *opts)
    except ValueError as e:
        raise Refused(str(e)) from None
    try:
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
    except NotAHistory as e:  # a file that is no history at all is bad input
        raise Refused(str(e)) from None
    dropped = len(lost(problems))
    _refuse_unreadable(path, results, problems, dropped, asked.lenient)
    deciding = tuple(model_checkers(model))
    main = [r for r in results if r.checker in deciding]
    _refuse_uninterpretable(path, main, problems)
    verdict = combine(main)
    if dropped and verdict in (Verdict.VALID, Verdict.INVALID):
        # The lost ops could be what made it valid, or invalid: neither is this history's.
        verdict = Verdict.UNKNOWN
    return Answer(
        model=model,
        verdict=verdict,
        results=results,
        deciding=deciding,
        problems=problems,
        dropped=dropped,
        sem=sem,
    )


def _check_txns(
    path: Path, model: str, other_opts: list[str], time_limit: float, asked: ModelCheck
) -> Answer:
    """``list-append`` and ``rw-register``: Elle-style transactional checking."""
    from chaos.checkers.elle import DEFAULT_CONSISTENCY, NoHistory, TxnInputError, check_file
    from chaos.checkers.elle.loading import read_commit_order
    from chaos.checkers.elle.options import VersionOrder
    from chaos.checkers.verdict import Verdict

    if other_opts:
        raise Refused(f"{' '.join(other_opts)}: not with --model {model}")
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
        raise Refused(str(e)) from None
    lost = [p for p in problems if not p.truncated]
    r = results[0]
    if problems and not any(r.stats.get("txns", {}).values()) and not r.stats.get("skipped_ops"):
        raise Refused(f"no readable op in {path}", problems)
    verdict = r.verdict
    if lost and verdict is Verdict.VALID:
        verdict = Verdict.UNKNOWN
    return Answer(
        model=model,
        verdict=verdict,
        results=results,
        deciding=(r.checker,),
        problems=problems,
        dropped=len(lost),
    )


def _semantics(
    model: str,
    preset: str | None,
    init: str | None,
    nil_read: str | None,
    failed_cas: str | None,
) -> Semantics:
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


def _refuse_unreadable(
    path: Path, results: list[CheckResult], problems: Sequence[Any], dropped: int, lenient: bool
) -> None:
    """Refuse a history with no readable op, or with unreadable lines unless ``lenient``."""
    stats = next((r for r in results if r.checker == "stats"), None)
    if stats is not None and not stats.stats.get("count") and problems:
        raise Refused(f"no readable op in {path}", problems)
    if dropped and not lenient:
        raise Refused(
            f"{path} is not a well-formed history ({dropped} problem(s) "
            "above); a verdict on what could be read would be about another history. Fix it, "
            "or pass --lenient to check the rest (the verdict is then at best unknown).",
            problems,
        )


def _refuse_uninterpretable(path: Path, main: list[CheckResult], problems: Sequence[Any]) -> None:
    """A model checker that could not interpret the history (an op the model has no meaning
    for, a cas without [expected new]) is bad input, not an unknown verdict."""
    cannot = next((r for r in main if r.summary.startswith("cannot check: ")), None)
    if cannot is not None:
        raise Refused(f"{path}: {cannot.summary[len('cannot check: ') :]}", problems)
