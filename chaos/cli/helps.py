"""Help texts: the examples under a command, the shared sentences of the options several commands
take, and the texts that name what the registries hold, derived when the help is shown (they need
heavy imports, which `chaos --help` and `chaos check` must not pay)."""

from __future__ import annotations

from typing import Any

import click

from chaos.core import run_options

__all__ = [
    "DERIVED",
    "QUIET_HELP",
    "SANDBOX_NAME_HELP",
    "SEED_HELP",
    "TIME_LIMIT_HELP",
    "LazyHelp",
    "WorkloadsHelp",
    "examples",
    "gradable_help",
]


def examples(*lines: str) -> str:
    """A command's epilog: examples, one a line (``\\b`` keeps click from joining them)."""
    return "\b\nExamples:\n" + "\n".join(f"  {x}" for x in lines)


# Help texts of the options several commands share: one concept, one name, one sentence (the
# vocabulary test in tests/unit/test_cli_vocabulary.py holds every command to it).
SEED_HELP = run_options.named("seed").help
TIME_LIMIT_HELP = run_options.named("time_limit").help
QUIET_HELP = run_options.named("quiet").help
SANDBOX_NAME_HELP = "The sandbox's name (several sandboxes can coexist)."


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


def gradable_help() -> str:
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
