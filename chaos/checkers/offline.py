"""Checking history files offline: any format in, checker results out.

:func:`load_any_history` reads chaos JSONL, Jepsen EDN (``history.edn``, a vector or one map per
line) and Jepsen log / ``history.txt`` lines, detected from the name and the first line.
:func:`check_history` maps a ``--model`` name to checkers; :func:`check_file` does both, and for
the counting checkers on JSONL it skips building :class:`Op` records altogether: the one reader
(``chaos.histories.reader``) decodes the lines as lean ``OpLine`` records, which become
``(process, type, f, value, error)`` rows a block at a time — what makes a million-op history
take seconds. :func:`write_history_edn` exports a stored run's history for Jepsen's own tools
(Knossos, Elle).
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, eq, not_
from pathlib import Path
from typing import Literal

from chaos.checkers._rows import NEMESIS, OpRows, rows_of
from chaos.checkers.budget import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT
from chaos.checkers.counter import counter_rows
from chaos.checkers.exceptions import exceptions_rows
from chaos.checkers.linearizable import check_linearizable
from chaos.checkers.queue import total_queue_rows
from chaos.checkers.semantics import Semantics, build_model, counter_start, semantics
from chaos.checkers.sets import set_full_rows
from chaos.checkers.stats import stats_rows
from chaos.checkers.unique_ids import unique_ids_rows
from chaos.checkers.verdict import CheckResult, Verdict, check_safe
from chaos.exits import keep_until_exit
from chaos.histories import edn, jepsen_log
from chaos.histories.files import open_input
from chaos.histories.jsonl import LineProblem, read_history
from chaos.histories.limits import MAX_INPUT_BYTES
from chaos.histories.ops import Op, orphan_completions
from chaos.histories.reader import OP_LINES, OpLine, read_blocks

__all__ = [
    "MODEL_NAMES",
    "Format",
    "NotAHistory",
    "check_file",
    "check_history",
    "detect_format",
    "load_any_history",
    "load_history_lines",
    "load_rows",
    "lost",
    "model_checkers",
    "orphan_problems",
    "write_history_edn",
]

Format = Literal["jsonl", "edn", "log"]

# --model name -> linearizability model (None: none) and counting checkers
_PLAN: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "cas-register": ("cas-register", ()),
    "register": ("register", ()),
    "kv": ("kv", ()),
    "set": ("set", ("set-full",)),
    "set-full": (None, ("set-full",)),
    "queue": ("queue", ()),
    "total-queue": (None, ("total-queue",)),
    "counter": (None, ("counter",)),
    "unique-ids": (None, ("unique-ids",)),
}
MODEL_NAMES: tuple[str, ...] = tuple(_PLAN)
_ROW_CHECKERS: dict[str, Callable[[OpRows], CheckResult]] = {
    "set-full": set_full_rows,
    "total-queue": total_queue_rows,
    "counter": counter_rows,
    "unique-ids": unique_ids_rows,
    "stats": stats_rows,
    "exceptions": exceptions_rows,
}


class NotAHistory(Exception):
    """The path is missing, unreadable, or holds nothing that reads as a history."""


def _resolve(path: Path) -> Path:
    if path.is_dir():
        for name in ("history.jsonl", "history.edn", "history.txt", "jepsen.log"):
            if (path / name).is_file():
                return path / name
        raise NotAHistory(f"{path} holds no history.jsonl, history.edn or history.txt")
    if not path.exists():
        raise NotAHistory(f"{path} does not exist")
    return path


def detect_format(path: Path) -> Format:
    """Guess the format from the suffix, else from the first non-blank line."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix == ".edn":
        return "edn"
    if suffix == ".log":
        return "log"
    with open_input(path, MAX_INPUT_BYTES) as fh:
        head = fh.read(64 * 1024).decode("utf-8", errors="replace")
    for line in head.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("{"):
            try:
                if isinstance(json.loads(s), dict):
                    return "jsonl"
            except ValueError:
                pass
        if s[0] in "{[(#;":
            return "edn"
        break
    if jepsen_log.looks_like_log(head):
        return "log"
    return "jsonl"


def load_any_history(path: Path) -> tuple[list[Op], list[LineProblem]]:
    """Read a history file (or a run folder's history) of any supported format.

    Returns the ops and the lines that could not be read; raises :class:`NotAHistory` only when
    there is no file to read.
    """
    ops, _, problems = load_history_lines(path)
    return ops, problems


def load_history_lines(path: Path) -> tuple[list[Op], Sequence[int] | None, list[LineProblem]]:
    """:func:`load_any_history`, with the line each op starts on when the format tells it
    (EDN), else None."""
    path = _resolve(Path(path))
    try:
        fmt = detect_format(path)
        if fmt == "edn":
            h = edn.read_history_lines(path)
            return h.ops, h.lines, h.problems
        if fmt == "log":
            ops, problems = jepsen_log.read_log(path)
            return ops, None, problems
        loaded = read_history(path)  # the one reader of chaos's JSONL (msgspec blocks)
        return loaded.records, None, loaded.problems
    except OSError as e:
        raise NotAHistory(f"cannot read {path}: {e.strerror or e}") from None


def orphan_problems(
    path: Path, ops: Sequence[Op], lines: Sequence[int] | None
) -> list[LineProblem]:
    """Each completion with no invocation by its process before it, as a problem naming its
    line (or its ``:index`` where the format does not tell lines): a malformed history."""
    out: list[LineProblem] = []
    for pos in orphan_completions(ops):
        op = ops[pos]
        out.append(
            LineProblem(
                str(path),
                lines[pos] if lines is not None else 0,
                f"a :{op.type.value} completion (index {op.index}) of process "
                f"{op.process!r} with no invocation by that process before it",
                kind="malformed history",
            )
        )
    return out


def lost(problems: Sequence[LineProblem]) -> list[LineProblem]:
    """The problems that cost the history ops: all but a cut-off last line, which can only
    have been the history's last event (its op left without a completion: indeterminate)."""
    return [p for p in problems if not p.truncated]


_GET = tuple(attrgetter(a) for a in ("process", "type", "f", "value", "error"))


def _add_records(out: OpRows, recs: Sequence[OpLine], pos: int) -> int:
    """Append decoded lines as rows, grouped by f, nemesis apart; all loops run in C."""
    get_p, get_t, get_f, get_v, get_e = _GET
    procs = list(map(get_p, recs))
    fs = list(map(get_f, recs))
    rows = list(zip(count(pos), procs, map(get_t, recs), map(get_v, recs), map(get_e, recs)))
    nemesis = list(map(eq, procs, repeat(NEMESIS)))
    if any(nemesis):
        for row, f in compress(zip(rows, fs, strict=True), nemesis):
            out.nemesis.setdefault(f, []).append(row)
        client = list(map(not_, nemesis))
        rows = list(compress(rows, client))
        fs = list(compress(fs, client))
    by_f = out.by_f
    for f in set(fs):
        lst = by_f.get(f)
        if lst is None:
            lst = by_f[f] = []
        lst.extend(compress(rows, map(eq, fs, repeat(f))))
    return pos + len(recs)


def _jsonl_rows(path: Path) -> tuple[OpRows, list[LineProblem]]:
    """The lean JSONL reader: the lines ``read_history`` accepts, as rows, not Ops."""
    out = OpRows()
    problems: list[LineProblem] = []
    pos = 0
    # Millions of small containers are created and all kept: the cyclic collector would walk
    # them again and again for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        for block in read_blocks(path, OP_LINES, problems):
            pos = _add_records(out, block, pos)
    finally:
        if enabled:
            gc.enable()
    out.count = pos
    return out, problems


def load_rows(path: Path) -> tuple[OpRows, list[LineProblem]]:
    """Rows for the counting checkers, from any format (lean and fast for JSONL)."""
    path = _resolve(Path(path))
    if detect_format(path) == "jsonl":
        try:
            return _jsonl_rows(path)
        except OSError as e:
            raise NotAHistory(f"cannot read {path}: {e.strerror or e}") from None
    ops, problems = load_any_history(path)
    return rows_of(ops), problems


def _plan(model: str) -> tuple[str | None, tuple[str, ...]]:
    if model not in _PLAN:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
    lin, counting = _PLAN[model]
    return lin, (*counting, "stats", "exceptions")


def _check_rows(rows: OpRows, names: Sequence[str], sem: Semantics | None) -> list[CheckResult]:
    def run(n: str) -> CheckResult:
        if n == "counter" and sem is not None:
            return counter_rows(rows, counter_start(sem))
        return _ROW_CHECKERS[n](rows)

    return [check_safe(n, lambda n=n: run(n)) for n in names]  # type: ignore[misc]


def model_checkers(model: str) -> tuple[str, ...]:
    """The checkers whose verdict answers ``--model``'s question: the linearizability checker
    and the model's counting checkers, not ``stats`` and ``exceptions`` (warnings there)."""
    lin, counting = _plan(model)
    return (*([f"linearizable-{lin}"] if lin is not None else []), *counting[:-2])


def check_history(
    ops: Sequence[Op],
    model: str,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    max_states: int | None = DEFAULT_MAX_STATES,
    sem: Semantics | None = None,
    independent: bool | None = None,
    empty: Verdict = Verdict.UNKNOWN,
    refuse_orphans: bool = False,
) -> list[CheckResult]:
    """Run the checkers ``model`` names (see :data:`MODEL_NAMES`) plus stats and exceptions.

    ``sem`` (default Porcupine's, see :mod:`chaos.checkers.semantics`) sets the model's
    parameters; ``independent``, ``empty`` and ``refuse_orphans`` go to
    :func:`~chaos.checkers.linearizable.check_linearizable`.
    """
    lin, counting = _plan(model)
    results: list[CheckResult] = []
    if lin is not None:
        m = build_model(lin, sem or semantics())
        results.append(
            check_safe(
                f"linearizable-{lin}",
                lambda: check_linearizable(
                    ops,
                    m,
                    time_limit=time_limit,
                    max_states=max_states,
                    independent=independent,
                    empty=empty,
                    refuse_orphans=refuse_orphans,
                ),
            )
        )
    rows = rows_of(ops)
    keep_until_exit(rows)
    results += _check_rows(rows, counting, sem)
    return results


def check_file(
    path: Path,
    model: str,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    max_states: int | None = DEFAULT_MAX_STATES,
    sem: Semantics | None = None,
    independent: bool | None = None,
    empty: Verdict = Verdict.UNKNOWN,
    strict: bool = False,
) -> tuple[list[CheckResult], list[LineProblem]]:
    """Load ``path`` (a file or a run folder) and check it as ``model`` (see
    :func:`check_history` for the options).

    For the linearizability models, completions with no invocation are problems too
    (:func:`orphan_problems`). ``strict``: when a problem cost ops (:func:`lost`) or a
    completion has no invocation, return only ``stats`` (what was read) and the problems: the
    history is malformed, and a verdict would be about another history."""
    lin, counting = _plan(model)
    if lin is None:
        with _collector_off():
            rows, problems = load_rows(path)
            if strict and lost(problems):
                return _check_rows(rows, ("stats",), sem), problems
            return _check_rows(rows, counting, sem), problems
    with _collector_off():
        ops, lines, problems = load_history_lines(path)
        keep_until_exit(ops)
        if strict and lost(problems):
            return _check_rows(rows_of(ops), ("stats",), sem), problems
        results = check_history(
            ops,
            model,
            time_limit=time_limit,
            max_states=max_states,
            sem=sem,
            independent=independent,
            empty=empty,
            refuse_orphans=strict,
        )
        # Orphan completions: found by the pairing itself (no pass of their own), named here.
        lin_result = results[0]
        if lin_result.stats.get("orphans") or lin_result.stats.get("unmatched_completions"):
            problems += orphan_problems(path, ops, lines)
            if strict:
                return [r for r in results if r.checker == "stats"], problems
    return results, problems


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """No garbage collection while a check runs, one after. Millions of rows, or the ops, the
    search's cache and its tuples, stay alive while the checkers allocate and hold no cycles:
    every full collection walked all of them again for nothing (a third of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write_history_edn(run_dir: Path) -> Path:
    """Write ``history.edn`` next to ``history.jsonl`` in a run folder, for Jepsen's tools.

    Lines of ``history.jsonl`` that cannot be read are left out (the JSONL file still has them).
    """
    run_dir = Path(run_dir)
    loaded = read_history(run_dir / "history.jsonl")
    out = run_dir / "history.edn"
    edn.write_history(out, loaded.records)
    return out
