"""The `chaos` command line: the group that holds every command, and how a command's end
becomes its exit status.

Exit statuses: chaos.exits (0 valid, 1 invalid, 2 unknown, 3 bad usage or bad input, 4 environment
problem, 5 internal error, 130 interrupted). Every option is checked by its click type, and every
fault, trigger and schedule against the workload, before anything is created: a bad command exits
3 with one line and leaves nothing behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import Any, NoReturn

import click

from chaos.cli.check import check
from chaos.cli.cleanup import cleanup
from chaos.cli.errors import PROCESS_ENTRY, internal_error
from chaos.cli.grade import feedback_command, grade_certs, grade_command
from chaos.cli.helps import examples
from chaos.cli.image import image
from chaos.cli.ls import ls
from chaos.cli.report import report, serve
from chaos.cli.run import explore, run
from chaos.cli.sandbox import sandbox
from chaos.exits import Exit, holds_kept, usage_status

__all__ = ["ChaosGroup", "entry", "main"]


# Each command imports what it runs inside its own body, for start-up time alone (nothing there
# dodges an import cycle: the layers contract in pyproject.toml rules those out): `chaos check`,
# `chaos ls` and `--help` must not load the Docker SDK and the etcd and NATS clients, which took
# `import chaos.cli` from 0.45 s to 1.4 s on this machine kind when imported at the top.


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


for command in (
    run,
    explore,
    check,
    cleanup,
    image,
    sandbox,
    grade_command,
    feedback_command,
    grade_certs,
    ls,
    report,
    serve,
):
    main.add_command(command)


def entry() -> Any:
    """The process's own entry point: the ``chaos`` script and ``python -m chaos.cli`` (a test
    or a program calling :data:`main` gets its ``SystemExit`` as usual). ``ctx.obj`` tells the
    commands that they own the process, and one that handed its data to
    :func:`chaos.exits.keep_until_exit` ends without freeing it."""
    try:
        return main(obj=PROCESS_ENTRY)
    except SystemExit as e:
        if isinstance(e.code, int) and holds_kept():
            _end_without_freeing(e.code)
        raise


def _end_without_freeing(code: int) -> NoReturn:
    """End the process with status ``code`` as Python's own exit would — the exit handlers
    run, the streams are flushed — but without freeing, one by one, the objects the command
    kept (chaos.exits.keep_until_exit): the operating system takes the memory back at once."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing can reach it
            stream.flush()
    os._exit(code)
