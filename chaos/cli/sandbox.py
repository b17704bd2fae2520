"""``chaos sandbox``: local containers running sshd, the machines of ``--backend ssh``."""

from __future__ import annotations

from pathlib import Path

import click

from chaos.cli.deprecation import old_name
from chaos.cli.errors import fail
from chaos.cli.helps import SANDBOX_NAME_HELP, examples
from chaos.cli.output import progress
from chaos.exits import Exit

__all__ = ["sandbox"]


@click.group(
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
        box = sb.up(n, name=name, out=out, user=user, progress=progress(False))
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
