"""``chaos report RUN_DIR`` and ``chaos serve``.

The report knows no workload: these commands are built with a lookup from a run's name to its
workload's section contributors (chaos.report.contrib); ``report`` and ``serve`` are chaos's,
``report_command`` and ``serve_command`` the generic ones (generic sections only). Errors exit
with chaos.exits' statuses (3 bad usage or input, 4 environment problem).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import click

from chaos.exits import Exit
from chaos.report.contrib import ContributorsFor, no_contributors
from chaos.report.defaults import DEFAULT_HOST, DEFAULT_PORT
from chaos.report.loading import NotARunDir

__all__ = [
    "make_report_command",
    "make_serve_command",
    "report",
    "report_command",
    "report_contributors",
    "serve",
    "serve_command",
]


class _Failed(click.ClickException):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: IO[Any] | None = None) -> None:
        click.secho(f"chaos: {self.message}", fg="red", err=True)


def make_report_command(contributors_for: ContributorsFor = no_contributors) -> click.Command:
    @click.command(
        "report",
        epilog="\b\nExamples:\n  chaos report store/lab3/latest\n"
        "  chaos report grades/2026-12-01-lab3/runs/alice/pause/r1",
    )
    @click.argument("run_dir", type=click.Path(path_type=Path))
    def report_command(run_dir: Path) -> None:
        """Render RUN_DIR/report.html from the stored run (offline) and print its path."""
        # Imported here: the page pulls in numpy, and every other chaos command would pay for it.
        from chaos.report.page import render

        try:
            out = render(run_dir, contributors_for)
        except NotARunDir as x:
            raise _Failed(str(x), Exit.USAGE) from None
        except OSError as x:
            raise _Failed(f"cannot write the report: {x}", Exit.ENVIRONMENT) from None
        click.echo(str(out))

    return report_command


def make_serve_command(contributors_for: ContributorsFor = no_contributors) -> click.Command:
    @click.command(
        "serve",
        epilog="\b\nExamples:\n  chaos serve\n  chaos serve --store /data/chaos-store --port 8080\n"
        "  chaos serve --host 0.0.0.0 --port 0",
    )
    @click.option(
        "--store",
        type=click.Path(path_type=Path, file_okay=False),
        default=lambda: Path(os.environ.get("CHAOS_STORE", "store")),
        show_default="store, or $CHAOS_STORE",
        help="Folder that holds the stored runs.",
    )
    @click.option(
        "--host",
        default=DEFAULT_HOST,
        show_default=True,
        help="Address to listen on (anything but 127.0.0.1, localhost or ::1 serves the network).",
    )
    @click.option(
        "--port",
        default=DEFAULT_PORT,
        show_default=True,
        type=click.IntRange(0, 65535),
        help="Port to listen on, 0 to 65535 (0: any free port).",
    )
    def serve_command(store: Path, host: str, port: int) -> None:
        """Browse the stored runs: list, open reports, download a run as a zip."""
        # here, not at the top: every chaos command builds this one, and http.server costs
        # the others' start-up (`chaos check`'s above all: docs/benchmarks.md)
        from chaos.report.serve import make_server

        try:
            server = make_server(store, host, port, contributors_for=contributors_for)
        except OSError as x:
            raise _Failed(f"cannot listen on {host}:{port}: {x}", Exit.ENVIRONMENT) from None
        if host not in ("127.0.0.1", "localhost", "::1"):
            click.secho(f"warning: serving {store} to the network on {host}", fg="yellow", err=True)
        click.echo(f"serving {store.resolve()} at {server.url} (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()

    return serve_command


report_command = make_report_command()
serve_command = make_serve_command()


def report_contributors(name: str) -> Sequence[Any]:
    """The report sections of the workload a run is named after (none for an unknown name)."""
    from chaos.workloads import registry  # as in the commands: chaos --help stays quick

    try:
        wl = registry.get(name)
    except ValueError:
        return ()
    from chaos.core.capabilities import ReportSections

    return tuple(wl.report_sections()) if isinstance(wl, ReportSections) else ()


report = make_report_command(report_contributors)
serve = make_serve_command(report_contributors)
