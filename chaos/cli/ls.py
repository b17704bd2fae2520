"""``chaos ls``: the stored runs, newest first."""

from __future__ import annotations

from pathlib import Path

import click

from chaos.cli.helps import examples
from chaos.cli.options import store_option
from chaos.cli.output import VERDICT_COLOUR
from chaos.histories.safe_text import clean
from chaos.histories.store import faults_of, stored_runs, workload_of

__all__ = ["ls"]


@click.command("ls", epilog=examples("chaos ls", "chaos ls --store /data/chaos-store"))
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
