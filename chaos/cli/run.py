"""``chaos run`` and ``chaos explore``: their options are the declared ones
(chaos.core.run_options), made into click options by chaos.cli.options; the command hands a typed
request to chaos.orchestrator.plan and prints what comes back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from chaos.cli.deprecation import old_name, warn_renamed
from chaos.cli.errors import fail, run_errors
from chaos.cli.helps import DERIVED, WorkloadsHelp, examples
from chaos.cli.options import NodesCount, declared, given
from chaos.cli.output import print_results, progress
from chaos.core import run_options
from chaos.histories.safe_text import clean

__all__ = ["check_run_argv", "explore", "run"]


@click.command(
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

    nodes, nodes_file = _nodes_arg(given("nodes_arg", nodes_arg), nodes_file)
    asked["nodes_file"] = nodes_file
    request = runs.RunRequest.of(asked, nodes=nodes, argv=tuple(sys.argv[1:]))
    say = progress(quiet)
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


@click.command(
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

    request = ExploreRequest.of(asked, nodes=given("nodes", nodes))
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
            progress=progress(quiet),
            command=plan.command,
        )
    for line in summary_lines(found):
        click.echo(clean(line))
    if json_path is not None:
        write_json(json_path, to_json(found))
    sys.exit(found.exit_status())


def _nodes_arg(value: int | Path | None, nodes_file: Path | None) -> tuple[int | None, Path | None]:
    """``--nodes N`` is a count (None: not given), ``--nodes-file FILE`` names the machines.
    ``--nodes FILE`` (a Path from NodesCount) is the deprecated spelling of ``--nodes-file``."""
    if not isinstance(value, Path):
        return value, nodes_file
    if nodes_file is not None:
        fail(f"--nodes: {value} is not a number of nodes (the nodes file is --nodes-file)")
    warn_renamed("--nodes FILE", "--nodes-file FILE")
    return None, value


def check_run_argv(argv: list[str]) -> None:
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
