"""The `chaos` command line.

Exit codes: 0 valid, 1 invalid, 2 unknown, 3 bad usage or bad input, 4 environment problem
(no Docker engine, image build failed), 5 internal error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from chaos.histories.store import DEFAULT_STORE

EXIT_USAGE = 3
EXIT_ENV = 4
EXIT_INTERNAL = 5


class ChaosUsageError(click.UsageError):
    exit_code = EXIT_USAGE


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="chaos-orchestrator")
def main() -> None:
    """A Jepsen-style chaos test orchestrator."""


def store_option(f):  # type: ignore[no-untyped-def]
    return click.option(
        "--store",
        type=click.Path(path_type=Path, file_okay=False),
        default=DEFAULT_STORE,
        show_default=True,
        help="Folder that holds the stored runs.",
    )(f)


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.secho(f"chaos: {message}", fg="red", err=True)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
