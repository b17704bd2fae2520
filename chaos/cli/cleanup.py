"""``chaos cleanup``: what crashed runs left, removed through their backend."""

from __future__ import annotations

from typing import Any

import click

from chaos.cli.deprecation import old_name
from chaos.cli.errors import fail
from chaos.cli.helps import DERIVED, examples
from chaos.cli.options import declared
from chaos.core import run_options
from chaos.exits import Exit

__all__ = ["cleanup"]


@click.command(
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
