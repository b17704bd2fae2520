"""``chaos image``: the Docker backend's node image."""

from __future__ import annotations

import click

from chaos.cli.errors import fail
from chaos.cli.helps import examples
from chaos.cli.output import progress
from chaos.exits import Exit

__all__ = ["image"]


@click.group(epilog=examples("chaos image build", "chaos image build --force"))
def image() -> None:
    """The Docker backend's node image (built offline from Debian packages and PyPI wheels)."""


@image.command("build", epilog=examples("chaos image build", "chaos image build --force"))
@click.option("--force", is_flag=True, help="Rebuild even if an image with the same inputs exists.")
def image_build(force: bool) -> None:
    """Build the node image (nothing to do when one with the same inputs exists); print its tag."""
    from chaos.cluster.base import ClusterError
    from chaos.cluster.docker.backend import DockerBackend

    try:
        tag = DockerBackend().build_image(progress(False), force=force)
    except ClusterError as e:
        fail(str(e), Exit.ENVIRONMENT)
    click.echo(tag)
