"""How a command ends when it cannot answer: one red line and the status chaos.exits defines
for the cause (the exit codes are defined there, once, and mapped to causes here)."""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Iterator
from typing import NoReturn

import click

from chaos.exits import Exit
from chaos.histories.safe_text import clean

# The root context's ``obj`` when the command runs as the process itself (chaos.cli.app's
# ChaosGroup.__call__), not inside a test's or a caller's interpreter.
PROCESS_ENTRY = "chaos: the process's own command"

__all__ = ["fail", "internal_error", "run_errors"]


def fail(message: str, code: int = Exit.USAGE) -> NoReturn:
    click.secho(f"chaos: {message}", fg="red", err=True)
    sys.exit(code)


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
