"""``chaos check``: a stored run's own checkers again, or (``--model``) a history file against a
model (chaos.cli.model_check prints that answer)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from chaos.checkers.history_file import MODELS, ModelCheck, model_argv
from chaos.cli.deprecation import old_name
from chaos.cli.errors import PROCESS_ENTRY, fail
from chaos.cli.helps import examples
from chaos.cli.model_check import Pages, check_history, model_options
from chaos.cli.options import click_type
from chaos.cli.output import print_results
from chaos.exits import hold_until_exit
from chaos.histories.safe_text import clean
from chaos.run_option import POSITIVE, SECONDS

__all__ = ["check"]


@click.command(
    context_settings={"ignore_unknown_options": False},
    epilog=examples(
        "chaos check store/lab3/latest",
        "chaos check history.edn --model cas-register --semantics knossos",
        "chaos check history.edn --model list-append --consistency serializable --json",
        "chaos check store/lab3/latest/history.jsonl --model total-queue",
    ),
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "-m",
    type=click.Choice(MODELS),
    default=None,
    help="Check a history file (JSONL, Jepsen EDN or log) against this model instead of the "
    "run's own checkers.",
)
@model_options
@click.option(
    "--consistency",
    default=None,
    help="With --model list-append|rw-register: the consistency model (default "
    "strict-serializable).",
)
@click.option(
    "--search-timeout",
    type=click_type(SECONDS),
    default=None,
    help="With --model: seconds the linearizability search may take before answering unknown "
    "(> 0; default 60).",
)
@old_name("--time-limit", new="--search-timeout")
@click.option(
    "--max-states",
    type=click_type(POSITIVE),
    default=None,
    help="With --model: configurations the linearizability search may remember before answering "
    "unknown (>= 1; default 5000000).",
)
@click.option("--json", "as_json", is_flag=True, help="With --model: results as JSON.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    metavar="DIR",
    help="With --model: draw the evidence into DIR (index.html; the cycles found, each edge "
    "explained; a failed linearization's longest prefix and the ops that cannot follow it).",
)
@click.pass_context
def check(
    ctx: click.Context,
    path: Path,
    model: str | None,
    search_timeout: float | None,
    max_states: int | None,
    as_json: bool,
    out: Path | None,
    consistency: str | None,
    **model_opts: Any,
) -> None:
    """Re-run the checkers on a stored run (offline, no Docker), or check a history file."""
    is_dir, is_file = _path_kind(path)
    if model is not None or is_file:
        if model is None:
            fail(f"{path} is a history file: say what it should satisfy with --model")
        asked = ModelCheck(
            model=model,
            **model_opts,
            consistency=consistency,
            time_limit=search_timeout,
            max_states=max_states,
        )
        files = [path] if is_file else sorted(path.iterdir()) if is_dir else []
        pages = None if out is None else _pages_into(out, path)
        if ctx.obj == PROCESS_ENTRY:  # the history dies with the process: not freed op by op
            hold_until_exit()
        _check_history(path, asked, files, as_json=as_json, pages=pages)
    forwarded = model_argv(**model_opts)  # a stored run's check takes none of them
    if consistency is not None:
        forwarded.append(f"--consistency={consistency}")
    if out is not None:
        forwarded.append(f"--out={out}")
    if forwarded:
        fail(f"{' '.join(forwarded)}: only with --model (a run is checked by its lab's checkers)")
    _recheck(path)


def _pages_into(out: Path, source: Path) -> Pages:
    """What ``--out DIR`` writes once the check has its results (chaos.report's pages)."""

    def write(results: Sequence[Any]) -> Sequence[Path]:
        from chaos.report.check_pages import write_check_pages  # start-up time

        return write_check_pages(out, results, source)

    return write


def _path_kind(path: Path) -> tuple[bool, bool]:
    """(a folder, a regular file) for ``chaos check PATH``; one that is neither but exists, or
    cannot be looked at, is refused."""
    try:
        exists, is_dir, is_file = path.exists(), path.is_dir(), path.is_file()
    except OSError as e:  # a name too long, a loop of links
        fail(f"{clean(path)}: cannot read: {e.strerror or e}")
    if exists and not is_dir and not is_file:
        fail(f"{clean(path)}: not a regular file")
    return is_dir, is_file


def _check_history(
    path: Path, asked: ModelCheck, files: list[Path], *, as_json: bool, pages: Pages | None
) -> NoReturn:
    """``chaos check PATH --model M``: each of ``files`` within the input limits, then the check,
    which prints and exits."""
    from chaos.histories.limits import InputError, check_size, input_guard

    try:
        for f in files:
            check_size(f)
        with input_guard(path):
            check_history(path, asked, as_json=as_json, pages=pages)
    except (InputError, OSError) as e:
        fail(clean(e))


def _recheck(path: Path) -> NoReturn:
    """``chaos check RUN``: the run's own checkers again; its results stored and printed."""
    from chaos.histories.limits import InputError
    from chaos.histories.store import NotARun, load_run

    try:
        run_ = load_run(path)
    except (NotARun, InputError) as e:
        fail(clean(e))
    for p in run_.problems:
        click.secho(f"warning: {clean(p)}", fg="yellow", err=True)
    # Here, not at the top: the workloads (etcd3, grpc, networkx) cost a history file's check
    # 0.5 s of start-up it never uses.
    from chaos.orchestrator.recheck import recheck

    try:
        results, verdict = recheck(run_, path)
    except ValueError as e:
        fail(str(e))
    print_results(results, verdict, run_.path)
    sys.exit(verdict.exit_code)
