"""The `chaos` command line.

Exit statuses: chaos.exits (0 valid, 1 invalid, 2 unknown, 3 bad usage or bad input, 4 environment
problem, 5 internal error, 130 interrupted). Every option is checked by its click type, and every
fault, trigger and schedule against the workload, before anything is created: a bad command exits
3 with one line and leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from chaos.checkers.cli import MODELS, ModelCheck, model_argv, model_options
from chaos.core import run_options
from chaos.deprecation import old_name, warn_renamed
from chaos.exits import Exit, usage_status
from chaos.histories.safe_text import clean
from chaos.histories.store import faults_of, stored_runs, workload_of
from chaos.run_option import POSITIVE, SECONDS, SEED, RunOption

# Each command imports what it runs inside its own body, for start-up time alone (nothing here
# dodges an import cycle: the layers contract in pyproject.toml rules those out): `chaos check`,
# `chaos ls` and `--help` must not load the Docker SDK and the etcd and NATS clients, which took
# `import chaos.cli` from 0.45 s to 1.4 s on this machine kind when imported at the top.

# The options of `chaos run`, `chaos explore` and the backends' are declared once, as data
# (chaos.core.run_options); their click options are made from those declarations (`declared`
# below), with the help texts that name the registries' contents derived when shown.


class ChaosGroup(click.Group):
    """Click exits 2 on a usage error, which is our "unknown" verdict: map it to 3, and keep the
    status of an error that set its own (an environment problem, 4)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        kwargs.setdefault("prog_name", "chaos")  # also under `python3 -m chaos.cli`
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.UsageError as e:
            # one line, as every other refusal: click's own layout (a usage block, a hint, the
            # error) is four
            where = e.ctx.command_path if e.ctx is not None else "chaos"
            message = " ".join(e.format_message().split())
            click.secho(f"chaos: {message} (see {where} -h)", fg="red", err=True)
            sys.exit(Exit.USAGE)
        except click.ClickException as e:
            e.show()
            sys.exit(usage_status(e.exit_code))
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            sys.exit(Exit.INTERRUPTED)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(Exit.INTERRUPTED)
        except Exception as e:
            # A bug of chaos's own (bad input has its own error, exit 3): the traceback goes to
            # a log the user can attach to a report, the terminal gets one line.
            internal_error(e)


def internal_error(e: BaseException) -> NoReturn:
    """Exit 5 with one line pointing to a log that holds the traceback."""
    import tempfile

    where = "(the log could not be written; traceback above)"
    try:
        fd, name = tempfile.mkstemp(prefix="chaos-internal-error-", suffix=".log")
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(f"chaos {' '.join(sys.argv[1:])}\n\n")
            traceback.print_exception(e, file=fh)
        where = f"details in {name}"
    except OSError:
        traceback.print_exception(e)
    fail(f"internal error: {type(e).__name__}: {clean(str(e)[:200])}; {where}", Exit.INTERNAL)


def examples(*lines: str) -> str:
    """A command's epilog: examples, one a line (``\\b`` keeps click from joining them)."""
    return "\b\nExamples:\n" + "\n".join(f"  {x}" for x in lines)


# Help texts of the options several commands share: one concept, one name, one sentence (the
# vocabulary test in tests/unit/test_cli_vocabulary.py holds every command to it).
SEED_HELP = run_options.named("seed").help
TIME_LIMIT_HELP = run_options.named("time_limit").help
QUIET_HELP = run_options.named("quiet").help
SANDBOX_NAME_HELP = "The sandbox's name (several sandboxes can coexist)."


class NodesCount(click.IntRange):
    """``--nodes``: a count >= 1; for one release also an existing file, the deprecated spelling
    of ``--nodes-file FILE`` (passed on as a Path, for the command to warn about)."""

    def __init__(self) -> None:
        super().__init__(min=1)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = value.strip().lstrip("+-").isdigit() if isinstance(value, str) else True
        if not number and Path(value).is_file():
            return Path(value)
        return super().convert(value, param, ctx)


@click.group(
    cls=ChaosGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples(
        "chaos run lab3 --nemesis pause",
        "chaos report store/lab3/latest",
        "chaos grade submissions/ --workload lab3",
        "chaos COMMAND -h",
    ),
)
@click.version_option(package_name="chaos-orchestrator")
def main() -> None:
    """A Jepsen-style chaos test orchestrator."""


def store_option(f: Any) -> Any:
    return run_options.named("store").click_option()(f)


@contextlib.contextmanager
def run_errors() -> Iterator[None]:
    """How a command that runs a cluster ends on an error: a spec or solution that cannot work
    (3), an environment that cannot (4), Ctrl-C (130), anything else an internal error (5)."""
    from chaos.cluster.base import ClusterError

    try:
        yield
    except ValueError as e:
        fail(str(e), Exit.USAGE)
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    except KeyboardInterrupt:
        fail("interrupted", Exit.INTERRUPTED)
    except Exception as e:
        internal_error(e)


def fail(message: str, code: int = Exit.USAGE) -> NoReturn:
    click.secho(f"chaos: {message}", fg="red", err=True)
    sys.exit(code)


def _progress(quiet: bool) -> Any:
    t0 = time.monotonic()

    def say(msg: str) -> None:
        if not quiet:
            click.echo(click.style(f"[{time.monotonic() - t0:6.1f}s] ", dim=True) + msg, err=True)

    return say


VERDICT_COLOUR = {"valid": "green", "invalid": "red", "unknown": "yellow"}


def print_results(results: list[Any], verdict: Any, run_dir: Path | None = None) -> None:
    for r in results:
        colour = VERDICT_COLOUR[r.verdict.value]
        click.echo(
            f"  {click.style(r.verdict.value.upper().ljust(7), fg=colour)} "
            f"{clean(r.checker)}: {clean(r.summary)}"
        )
        for a in r.anomalies[:3]:
            steps = a.get("chain") or [] if isinstance(a, dict) else []
            if steps:
                click.echo(f"           task {clean(a.get('task_id'))}:")
                for s in steps:
                    during = f"   [{'; '.join(s['during'])}]" if s.get("during") else ""
                    click.echo(
                        f"             {s['time']:8.3f}s {clean(s['node']):>3} "
                        f"{clean(s['component']):<7} {clean(s['step'])}{clean(during)}"
                    )
    click.secho(f"verdict: {verdict.value}", fg=VERDICT_COLOUR[verdict.value], bold=True)
    if run_dir is not None:
        click.echo(f"stored in {run_dir}")


class LazyHelp(click.Option):
    """An option whose help text is computed when help is shown (it needs heavy imports)."""

    def __init__(self, *args: Any, help_from: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._help_from = help_from

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self._help_from()
        return super().get_help_record(ctx)


class WorkloadsHelp(click.Command):
    """A command whose help says ``{workloads}`` where the workloads' names go, filled in from the
    registry when the help is shown (a heavy import); the one-line summary leaves them out."""

    SLOT = " (one of: {workloads})"

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from chaos.workloads import registry

        self.help = (self.help or "").replace("{workloads}", ", ".join(registry.names()))
        super().format_help_text(ctx, formatter)

    def get_short_help_str(self, limit: int = 45) -> str:
        return click.utils.make_default_short_help((self.help or "").replace(self.SLOT, ""), limit)


def _nemesis_help() -> str:
    from chaos.nemesis import table

    return (
        "Comma-separated faults, each with an optional target ("
        + table.help_text()
        + "; e.g. pause:worker, kill:broker, partition:halves, freeze:n1+n2), or a workload's "
        "fault points (" + _fault_points_help() + "). See docs/nemesis.md."
    )


def _backend_help() -> str:
    from chaos.cluster import backends

    return f"Where the nodes come from: {', '.join(backends.names())}."


def _shipped() -> list[tuple[str, object]]:
    """The shipped workloads by name: the help texts below are derived from their capabilities,
    never listed here."""
    from chaos.workloads import registry

    return [(n, registry.BUILTIN[n]()) for n in sorted(registry.BUILTIN)]


def _fault_points_help() -> str:
    """Every shipped workload's fault points, for ``--nemesis`` help."""
    from chaos.core.capabilities import FaultPoints

    return "; ".join(
        f"{n}: {', '.join(wl.fault_points)}" for n, wl in _shipped() if isinstance(wl, FaultPoints)
    )


def _solution_help() -> str:
    """The shipped workloads' built-in solutions, from their own declarations (never listed
    here)."""
    from chaos.core.capabilities import Solutions

    found = [
        f"{n}: {', '.join(wl.solutions())}" for n, wl in _shipped() if isinstance(wl, Solutions)
    ]
    return (
        "A built-in solution (" + "; ".join(found) + ") or a path to a folder with protocol.py "
        "(default: the workload's reference solution)."
    )


def _gradable_help() -> str:
    """``grade --workload``'s help, naming the workloads that can be graded (derived)."""
    from chaos.core.capabilities import Gradable

    names = [n for n, wl in _shipped() if isinstance(wl, Gradable)]
    return f"The workload graded ({', '.join(names)})."


def _scenarios_help() -> str:
    """``--scenarios``'s help, naming the workloads that have seed scenarios (derived)."""
    from chaos.core.capabilities import Scenarios

    have = [f"{n} has {len(wl.scenarios)}" for n, wl in _shipped() if isinstance(wl, Scenarios)]
    return (
        f"Run the workload's seed scenarios ({', '.join(have)}), one run each with the scenario "
        "as its fault, and write its lab report JSON. Refused with --nemesis (each scenario is "
        "the run's fault); --trigger and --schedule apply to every scenario run."
    )


def _workload_options_help() -> str:
    """Every shipped workload's ``-o`` options, from their declarations (never listed here)."""
    from chaos.core.capabilities import options_of
    from chaos.core.options import help_line
    from chaos.workloads import registry

    found = []
    for name in sorted(registry.BUILTIN):
        declared = options_of(registry.BUILTIN[name]())
        if declared:
            found.append(help_line(name, declared))
    return (
        "A workload option KEY=VALUE (" + "; ".join(found) + "; see docs/workloads.md). Repeatable."
    )


def declared(options: Sequence[RunOption], /, **override: dict[str, Any]) -> Any:
    """The click options of declared run options, in their order; ``override``: by option name,
    a keyword of ``click.option`` one command sets its own way."""

    def apply(f: Any) -> Any:
        for o in reversed(options):
            f = o.click_option(**override.get(o.name, {}))(f)
        return f

    return apply


def _derived(help_from: Any) -> dict[str, Any]:
    return {"cls": LazyHelp, "help_from": help_from}


# the declared options whose help names what the registries hold, derived when shown
DERIVED: dict[str, dict[str, Any]] = {
    "backend_name": _derived(_backend_help),
    "nemesis": _derived(_nemesis_help),
    "solution": _derived(_solution_help),
    "scenarios": _derived(_scenarios_help),
    "options": _derived(_workload_options_help),
}


@main.command(
    cls=WorkloadsHelp,
    epilog=examples(
        "chaos run lab3 --nemesis pause --seed 7",
        "chaos run lab3 --solution ./alice --trigger 'pause worker on delivery'",
        "chaos run lab1 --nemesis clock:skew=3:orders@n1 --tasks 30",
        "chaos run lab3 --scenarios all --lab-report-out lab3.json",
        "chaos run etcd-register --nemesis partition:one --time-limit 20 --rate 50",
    ),
)
@click.argument("workload")
@declared(
    run_options.command_options("run"),
    **DERIVED,
    # a count, or for one release the nodes file itself (deprecated): the command sorts them out
    nodes={"type": NodesCount(), "dest": "nodes_arg"},
)
@old_name("--ack-wait", new="--option", key="ack_wait")
@old_name("--work-seconds", new="--option", key="work_seconds")
@old_name("--lab-report", new="--scenarios", value="all")
@old_name("--report", new="--lab-report-out")
def run(nodes_arg: int | Path, nodes_file: Path | None, quiet: bool, **asked: Any) -> None:
    """Run WORKLOAD (one of: {workloads}) on a fresh cluster and check it."""
    from chaos.orchestrator import plan as runs

    nodes, nodes_file = _nodes_arg(_given("nodes_arg", nodes_arg), nodes_file)
    asked["nodes_file"] = nodes_file
    request = runs.RunRequest.of(asked, nodes=nodes, argv=tuple(sys.argv[1:]))
    say = _progress(quiet)
    with run_errors():  # every run of the command checked before the first one starts
        plan = runs.plan_runs(request)
    click.echo(f"seed {plan.seed}", err=True)
    with run_errors():
        outcomes = runs.run_plan(plan, say)
    for o in outcomes:
        if len(outcomes) > 1:
            click.echo(f"{o.run_dir.name}:")
        print_results(o.results, o.verdict, o.run_dir)
        if o.error:
            click.secho(f"  note: {clean(o.error)}", fg="yellow")
        for w in o.warnings:
            click.secho(f"  warning: {clean(w)}", fg="yellow")
    report = runs.write_lab_report(plan, outcomes)
    if report is not None:
        click.echo(f"lab report: {report}")
    sys.exit(runs.run_status(outcomes))


@main.command(
    epilog=examples(
        "chaos explore lab3 --solution ./alice --seed 7",
        "chaos explore lab1 --solution acquire-without-cas --budget 6 --keep-going",
        "chaos explore lab3 --solution ./alice --json-out explore.json",
    )
)
@click.argument("workload")
@declared(run_options.command_options("explore"), **DERIVED)
@old_name("--all", new="--keep-going", flag=True)
@old_name("--ack-wait", new="--option", key="ack_wait")
@old_name("--json", new="--json-out")
def explore(
    nodes: int, budget: int, try_all: bool, json_path: Path | None, quiet: bool, **asked: Any
) -> None:
    """Try a fault at every transaction of WORKLOAD's solution: kill, pause and a double kill
    before and after each one a fault-free run made, then each fault point. Exit 1 when a run
    was invalid; 2 when --budget ended before every point was tried (the points left are
    named), a point was never reached or a run was unknown; 0 only when every point was tried
    and every run was valid. Every run gets its page; the paths are printed."""
    from chaos.histories.store import write_json
    from chaos.orchestrator.explore import explore as run_explore
    from chaos.orchestrator.explore import summary_lines, to_json
    from chaos.orchestrator.plan import ExploreRequest, plan_explore

    request = ExploreRequest.of(asked, nodes=_given("nodes", nodes))
    with run_errors():
        plan = plan_explore(request)
    click.echo(f"seed {plan.spec.seed}", err=True)
    with run_errors():
        found = run_explore(
            plan.spec,
            backend=plan.backend,
            store=request.store,
            workload=plan.workload,
            budget=budget,
            stop_at_first=not try_all,
            progress=_progress(quiet),
            command=plan.command,
        )
    for line in summary_lines(found):
        click.echo(clean(line))
    if json_path is not None:
        write_json(json_path, to_json(found))
    sys.exit(found.exit_status())


@main.command(
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
    type=SECONDS,
    default=None,
    help="With --model: seconds the linearizability search may take before answering unknown "
    "(> 0; default 60).",
)
@old_name("--time-limit", new="--search-timeout")
@click.option(
    "--max-states",
    type=POSITIVE,
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
            as_json=as_json,
            artefacts=None if out is None else _pages_into(out, path),
        )
        _check_history(path, asked, [path] if is_file else sorted(path.iterdir()) if is_dir else [])
    forwarded = model_argv(**model_opts)  # a stored run's check takes none of them
    if consistency is not None:
        forwarded.append(f"--consistency={consistency}")
    if out is not None:
        forwarded.append(f"--out={out}")
    if forwarded:
        fail(f"{' '.join(forwarded)}: only with --model (a run is checked by its lab's checkers)")
    _recheck(path)


def _pages_into(out: Path, source: Path) -> Callable[[Sequence[Any]], Sequence[Path]]:
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


def _check_history(path: Path, asked: ModelCheck, files: list[Path]) -> NoReturn:
    """``chaos check PATH --model M``: each of ``files`` within the input limits, then the check,
    which prints and exits."""
    from chaos.checkers.cli import check_history
    from chaos.histories.limits import InputError, check_size, input_guard

    try:
        for f in files:
            check_size(f)
        with input_guard(path):
            check_history(path, asked)
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


def _given(name: str, value: Any) -> Any:
    """``value`` if the option was typed, else None (its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return value if source is click.core.ParameterSource.COMMANDLINE else None


def _nodes_arg(value: int | Path | None, nodes_file: Path | None) -> tuple[int | None, Path | None]:
    """``--nodes N`` is a count (None: not given), ``--nodes-file FILE`` names the machines.
    ``--nodes FILE`` (a Path from NodesCount) is the deprecated spelling of ``--nodes-file``."""
    if not isinstance(value, Path):
        return value, nodes_file
    if nodes_file is not None:
        fail(f"--nodes: {value} is not a number of nodes (the nodes file is --nodes-file)")
    warn_renamed("--nodes FILE", "--nodes-file FILE")
    return None, value


@main.command(
    epilog=examples(
        "chaos cleanup",
        "chaos cleanup --backend ssh --nodes-file nodes.yaml",
        "chaos cleanup --run 410334a1b2 --include-live",
    )
)
@declared(run_options.command_options("cleanup"), **DERIVED)
@old_name("--nodes", new="--nodes-file")
@click.option(
    "--run",
    "run_id",
    default=None,
    metavar="RUN_ID",
    help="Only the resources of this run (the run_id in its spec.json).",
)
@click.option(
    "--include-live",
    "all_runs",
    is_flag=True,
    help="Also runs whose orchestrator is still alive (default: only orphaned runs).",
)
@old_name("--all", new="--include-live", flag=True)
def cleanup(backend_name: str, run_id: str | None, all_runs: bool, **backend_options: Any) -> None:
    """Remove what crashed runs left: containers, networks, paused processes, partitions.

    Only resources labelled as chaos's own are touched, and by default only those of runs whose
    orchestrator process is gone, so a run going on in another terminal is left alone.
    """
    from chaos.cluster import backends
    from chaos.cluster.base import ClusterError

    try:
        backend = backends.get(backend_name, **backend_options)
        done = backend.reap(run_id=run_id, include_live=all_runs)
    except ValueError as e:
        fail(str(e))
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    for line in done:
        click.echo(line)
    removed = sum(1 for line in done if line.startswith("removed "))
    click.echo("nothing to clean up" if not done else f"removed {removed} resource(s)")


@main.group(epilog=examples("chaos image build", "chaos image build --force"))
def image() -> None:
    """The Docker backend's node image (built offline from Debian packages and PyPI wheels)."""


@image.command("build", epilog=examples("chaos image build", "chaos image build --force"))
@click.option("--force", is_flag=True, help="Rebuild even if an image with the same inputs exists.")
def image_build(force: bool) -> None:
    """Build the node image (nothing to do when one with the same inputs exists); print its tag."""
    from chaos.cluster.base import ClusterError
    from chaos.cluster.docker.backend import DockerBackend

    try:
        tag = DockerBackend().build_image(_progress(False), force=force)
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    click.echo(tag)


@main.group(
    epilog=examples(
        "chaos sandbox up 3 --nodes-file nodes.yaml",
        "chaos run lab3 --backend ssh --nodes-file nodes.yaml --nemesis pause",
        "chaos sandbox down",
    )
)
def sandbox() -> None:
    """Local containers running sshd that stand in for VMs (for --backend ssh)."""


@sandbox.command(
    "up",
    epilog=examples(
        "chaos sandbox up 3 --nodes-file nodes.yaml",
        "chaos sandbox up 5 --name big --user student",
    ),
)
@click.argument("n", type=click.IntRange(1, 16))
@click.option(
    "--nodes-file",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="Where to write the nodes file (for --nodes-file of chaos run; default: in the "
    "sandbox's state folder).",
)
@old_name("--out", new="--nodes-file")
@click.option("--name", default="sandbox", show_default=True, help=SANDBOX_NAME_HELP)
@click.option(
    "--user",
    default="chaos",
    show_default=True,
    help="The user the nodes file names: chaos (passwordless sudo) or student (no sudo).",
)
def sandbox_up(n: int, out: Path | None, name: str, user: str) -> None:
    """Start N (1 to 16) containers running sshd; print the path of their nodes file."""
    from chaos.cluster.base import ClusterError, node_names
    from chaos.cluster.sandbox import machines as sb

    try:
        box = sb.up(n, name=name, out=out, user=user, progress=_progress(False))
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    for node, a in zip(node_names(len(box.addresses)), box.addresses, strict=True):
        click.echo(f"{node} {a}", err=True)
    click.echo(f"{n} node(s) up in {box.seconds:.1f} s", err=True)
    click.echo(box.nodes_file)


@sandbox.command("down", epilog=examples("chaos sandbox down", "chaos sandbox down --name big"))
@click.option("--name", default="sandbox", show_default=True, help=SANDBOX_NAME_HELP)
def sandbox_down(name: str) -> None:
    """Remove a sandbox's containers and network."""
    from chaos.cluster.base import ClusterError
    from chaos.cluster.sandbox import machines as sb

    try:
        done = sb.down(name=name)
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    for line in done:
        click.echo(f"removed {line}")
    if not done:
        click.echo(f"no sandbox {name}")


def _control_names(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if value.strip() == "none":
        return ()
    return tuple(n.strip() for n in value.split(",") if n.strip())


@main.command(
    "grade",
    epilog=examples(
        "chaos grade submissions/ --workload lab3 --repeats 5",
        "chaos grade submissions/ --workload lab1 --matrix grade.yaml --controls reference",
        "chaos grade submissions/ --workload lab3 --scheduler tls://grader0:8786 --certs tls/",
        "chaos grade --resume grades/2026-12-01-lab3",
    ),
)
@click.argument("submissions", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--workload", "lab", default=None, metavar="NAME", cls=LazyHelp, help_from=_gradable_help
)
@old_name("--lab", new="--workload")
@click.option(
    "--matrix",
    "matrix_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The configurations (grade.yaml; default: the lab's own). See docs/grading.md.",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 1000),
    default=3,
    show_default=True,
    help="Runs of each submission under each configuration (1 to 1000).",
)
@click.option("--seed", type=SEED, default=None, help=SEED_HELP)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output folder (default: grades/<date>-<lab>).",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="A Dask scheduler (tls://host:8786, with --certs) whose workers run the runs; default: "
    "this machine.",
)
@click.option(
    "--certs",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="The folder `chaos grade-certs` made: TLS to the --scheduler with its client certificate.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow a plain tcp:// --scheduler (whoever reaches it runs code as root on the workers).",
)
@click.option(
    "--parallel",
    type=click.IntRange(1, 256),
    default=None,
    help="Concurrent runs on this machine (default: from its cores and memory).",
)
@click.option(
    "--run-timeout",
    type=SECONDS,
    default=None,
    help="Seconds before a run is stopped (default: its time limit + recovery timeout + 180).",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="Go on with an interrupted grade in this folder; nothing finished is run again.",
)
@click.option(
    "--chaos-command",
    default=None,
    help="How workers start chaos, if not `python3 -m chaos.cli` (e.g. a venv's bin/chaos).",
)
@click.option(
    "--controls",
    default=None,
    metavar="NAMES",
    help="Only these shipped solutions as control rows, comma-separated (default: all of them; "
    "'none' for no control rows).",
)
@click.option(
    "--feedback",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also write a feedback pack per student into this folder (as `chaos feedback`).",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the matrix x submissions x repeats and an estimate of the time; run nothing.",
)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
def grade_command(
    submissions: Path | None,
    lab: str | None,
    matrix_file: Path | None,
    repeats: int,
    seed: int | None,
    out: Path | None,
    scheduler: str | None,
    certs: Path | None,
    insecure: bool,
    parallel: int | None,
    run_timeout: float | None,
    resume: Path | None,
    chaos_command: str | None,
    controls: str | None,
    feedback: Path | None,
    plan_only: bool,
    quiet: bool,
) -> None:
    """Grade every submission (a folder per student with its protocol.py) under a matrix of
    configurations, repeated, with the lab's shipped solutions as control rows."""
    from chaos.grade.cli import GradeArgs, plan_grade, run_grade

    args = GradeArgs(
        submissions=submissions,
        lab=lab,
        matrix_file=matrix_file,
        repeats=repeats,
        seed=seed,
        out=out,
        scheduler=scheduler,
        parallel=parallel,
        run_timeout=run_timeout,
        resume=resume,
        chaos_command=tuple(shlex.split(chaos_command)) if chaos_command else None,
        controls=_control_names(controls),
        certs=certs,
        insecure=insecure,
        check_run=_check_run_argv,
        feedback=feedback,
    )
    try:
        if plan_only:  # the plan is this command's output: said even with -q
            plan_grade(args, say=click.echo)
            return
        outcome = run_grade(args, say=_progress(quiet))
    except ValueError as e:
        fail(clean(str(e)))
    except OSError as e:
        fail(f"{clean(str(e))}", Exit.ENVIRONMENT)
    for name, path in outcome.reports.items():
        click.echo(f"{name}: {path}")
    if outcome.interrupted:
        sys.exit(Exit.INTERRUPTED)


def _check_run_argv(argv: list[str]) -> None:
    """ValueError naming the option when `chaos run` would refuse ``argv`` before it starts: by
    its types, or a fault target or trigger the workload does not have (creates nothing)."""
    from chaos.orchestrator.plan import check_faults

    try:
        p = run.make_context("run", list(argv)).params
    except click.UsageError as e:
        raise ValueError(" ".join(e.format_message().split())) from None
    nodes = p["nodes_arg"]  # a count, or (deprecated --nodes FILE) a path
    check_faults(
        p["workload"],
        nemesis=p["nemesis"],
        triggers=tuple(p["triggers"]),
        nodes=nodes if isinstance(nodes, int) else 0,
        schedule_file=p["schedule_file"],
    )


@main.command(
    "feedback",
    epilog=examples(
        "chaos feedback grades/2026-12-01-lab3",
        "chaos feedback grades/2026-12-01-lab3 --out handout/",
    ),
)
@click.argument("grade_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output folder (default: GRADE_DIR/feedback): a folder and a zip per student, and "
    "gradebook.csv.",
)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
def feedback_command(grade_dir: Path, out: Path | None, quiet: bool) -> None:
    """A feedback pack per student of a finished grade: a page of what failed, the anomaly that
    explains it, the command that reproduces it at home, the student's own runs (no other
    student's data, no path of the grading machine), zipped; with Gradescope's results.json
    and a gradebook CSV. See docs/grading.md."""
    from chaos.grade.feedback import PackLeak, write_feedback

    try:
        done = write_feedback(grade_dir, out or grade_dir / "feedback", _progress(quiet))
    except PackLeak as e:
        fail(clean(str(e)), Exit.INTERNAL)
    except ValueError as e:
        fail(clean(str(e)))
    except OSError as e:
        fail(clean(str(e)), Exit.ENVIRONMENT)
    click.echo(f"{len(done.zips)} pack(s) in {done.out}; gradebook: {done.gradebook}")


@main.command(
    "grade-certs",
    epilog=examples(
        "chaos grade-certs tls/ --scheduler-host grader0",
        "chaos grade-certs tls/ --scheduler-host grader0 --scheduler-host 10.0.0.5 --days 30",
    ),
)
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--scheduler-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="The scheduler's host name or address, for its certificate (repeatable).",
)
@old_name("--host", new="--scheduler-host", multiple=True)
@click.option(
    "--days",
    type=click.IntRange(1, 3650),
    default=365,
    show_default=True,
    help="Days (1 to 3650) the certificates are valid.",
)
def grade_certs(folder: Path, hosts: tuple[str, ...], days: int) -> None:
    """TLS certificates for `chaos grade --scheduler tls://...`: a CA of the grade's own and a
    certificate for the scheduler, the workers and the client, in a new folder."""
    from chaos.grade import certs

    try:
        certs.make(folder, hosts=hosts, days=days)
    except (ValueError, OSError) as e:
        fail(clean(str(e)))
    d = shlex.quote(str(folder))
    click.echo(
        f"made {folder}/: ca.pem, scheduler/worker/client .pem and -key.pem (keys owner-only; "
        "ca-key.pem stays here)\n"
        f"scheduler: dask scheduler --port 8786 --tls-ca-file {d}/ca.pem "
        f"--tls-cert {d}/scheduler.pem --tls-key {d}/scheduler-key.pem\n"
        f"each worker: dask worker tls://SCHEDULER:8786 --resources runs=2 --tls-ca-file "
        f"{d}/ca.pem --tls-cert {d}/worker.pem --tls-key {d}/worker-key.pem\n"
        f"the grade: chaos grade SUBMISSIONS --workload LAB --scheduler tls://SCHEDULER:8786 --certs {d}"
    )


@main.command("ls", epilog=examples("chaos ls", "chaos ls --store /data/chaos-store"))
@store_option
def ls(store: Path) -> None:
    """List stored runs, newest first."""
    for p, s in stored_runs(store):
        v = str(s.get("verdict", s.get("status", "?")))
        click.echo(
            f"{click.style(clean(v).ljust(11), fg=VERDICT_COLOUR.get(v, 'white'))} "
            f"{clean(workload_of(s) or '?'):15} {clean(s.get('solution', '?')):18} "
            f"{clean(faults_of(s) or '-'):28} "
            f"seed={clean(s.get('seed'))}  {clean(p)}"
        )


def _report_contributors(name: str) -> Sequence[Any]:
    """The report sections of the workload a run is named after (none for an unknown name)."""
    from chaos.workloads import registry  # as in the commands: chaos --help stays quick

    try:
        wl = registry.get(name)
    except ValueError:
        return ()
    from chaos.core.capabilities import ReportSections

    return tuple(wl.report_sections()) if isinstance(wl, ReportSections) else ()


from chaos.report.cli import make_report_command, make_serve_command  # noqa: E402

main.add_command(make_report_command(_report_contributors))
main.add_command(make_serve_command(_report_contributors))


if __name__ == "__main__":  # pragma: no cover
    main()
