"""The table of the options of the commands that run (``chaos run``, ``chaos explore``, and the
backends' for ``chaos cleanup``), in the order their help shows them: the command's own (which
workload, solution, faults, seed; where to write), the run parameters the test spec declares
(chaos.core.spec.TestSpec's fields) and the options the backends declare
(chaos.cluster.backends). Each is declared once, as a chaos.run_option.RunOption; the commands'
click options, the requests, the stored spec and the grade matrix are made from this table.

The click layer reads the declarations here: it never builds a spec (its contract in
pyproject.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaos.cluster import backends
from chaos.core.solution import REFERENCE
from chaos.core.spec import SPEC_OPTIONS
from chaos.histories.store import DEFAULT_STORE
from chaos.run_option import (
    BOTH,
    FLAG,
    RUN,
    SEED,
    TEXT,
    Choice,
    Number,
    PathOf,
    RunOption,
    for_command,
    values,
)

__all__ = [
    "backend_options",
    "backend_values",
    "command_options",
    "named",
    "spec_options",
    "spec_values",
    "table",
]

EXPLORE = frozenset({"explore"})
FILE = PathOf(dir_okay=False)
FOLDER = PathOf(file_okay=False)

# The commands' own options before the run parameters (an empty help is derived when shown).
HEAD: tuple[RunOption, ...] = (
    RunOption(
        name="backend_name",
        long="backend",
        type=TEXT,
        default=backends.DEFAULT,
        show_default=True,
        help="",
        commands=frozenset({"run", "explore", "cleanup"}),
    ),
    RunOption(name="nemesis", type=TEXT, default="", help="", commands=RUN),
    RunOption(
        name="triggers",
        long="trigger",
        type=TEXT,
        default=None,
        multiple=True,
        value=list,
        help="Fault fired by a system event, e.g. 'pause worker on delivery', "
        "'kill relay before publish [for 3s]'. Repeatable.",
        commands=RUN,
    ),
    RunOption(
        name="schedule_file",
        long="schedule",
        type=FILE,
        default=None,
        help="A scripted fault timeline (YAML): 'at 3s pause worker for 6s', ...",
        commands=RUN,
    ),
    RunOption(
        name="solution",
        type=TEXT,
        default=REFERENCE,
        show_default=True,
        help="",
        matrix="the solution is the submission being graded",
    ),
    RunOption(
        name="seed",
        type=SEED,
        default=None,
        help="Seed (>= 0) every random choice derives from; printed when left out.",
        matrix="every run's seed derives from the grade's --seed",
    ),
    RunOption(
        name="budget",
        type=Number(int, min=0),
        default=40,
        show_default=True,
        help="At most this many runs after the fault-free trace (0: the trace only).",
        commands=EXPLORE,
    ),
    RunOption(
        name="try_all",
        long="keep-going",
        type=FLAG,
        default=False,
        is_flag=True,
        help="Go on after the first invalid run.",
        commands=EXPLORE,
    ),
)

# ... and after them.
TAIL: tuple[RunOption, ...] = (
    RunOption(
        name="scenarios",
        type=Choice(("all",)),
        default=None,
        help="",
        commands=RUN,
        matrix="one configuration is one run: name a scenario with nemesis: <fault point>",
    ),
    RunOption(
        name="report_path",
        long="lab-report-out",
        type=FILE,
        default=None,
        metavar="FILE",
        help="Also write the lab report JSON (store/WORKLOAD/lab-report.json) to FILE.",
        commands=RUN,
        matrix="the grade writes its own report",
    ),
    RunOption(
        name="options",
        long="option",
        short="-o",
        type=TEXT,
        default=None,
        multiple=True,
        metavar="KEY=VALUE",
        value=dict,
        help="",
    ),
    RunOption(
        name="json_path",
        long="json-out",
        type=FILE,
        default=None,
        metavar="FILE",
        help="Also write the exploration (every point tried, its verdict and run) as JSON to FILE.",
        commands=EXPLORE,
    ),
    RunOption(
        name="no_html",
        type=FLAG,
        default=False,
        is_flag=True,
        help="Skip the HTML report page; `chaos report RUN` renders it later from the stored run.",
        commands=RUN,
        matrix="every graded run keeps its page: the grade's report links to it",
    ),
    RunOption(
        name="quiet",
        short="-q",
        type=FLAG,
        default=False,
        is_flag=True,
        help="No progress lines on stderr: the results only.",
        matrix="the grade's runs are always quiet",
    ),
    RunOption(
        name="stored_command",
        type=TEXT,
        default=None,
        hidden=True,
        metavar="COMMAND",
        help="Store COMMAND as the one that reproduces the run (chaos grade's workers run a copy "
        "of the submission: the run names the submission's own path).",
        commands=RUN,
        matrix="each graded run stores the command that reproduces it",
    ),
    RunOption(
        name="stored_solution",
        type=TEXT,
        default=None,
        hidden=True,
        metavar="PATH",
        help="Store PATH as the run's solution (with --stored-command: the submission graded).",
        commands=RUN,
        matrix="each graded run names the submission it grades",
    ),
    RunOption(
        name="stored_path",
        type=FOLDER,
        default=None,
        hidden=True,
        metavar="DIR",
        help="The folder where the run will be kept (chaos grade copies each run into its own "
        "folder): the run's page names it to re-check and re-render the run.",
        commands=RUN,
        matrix="each graded run's page names the grade's folder of the run",
    ),
    RunOption(
        name="store",
        type=FOLDER,
        default=DEFAULT_STORE,
        show_default=True,
        help="Folder that holds the stored runs.",
        commands=BOTH,
        matrix="runs are stored in the grade's out folder",
    ),
)


def spec_options(command: str) -> tuple[RunOption, ...]:
    """The run parameters ``command`` takes, in the order its help shows them."""
    return for_command(SPEC_OPTIONS, command)


def backend_options(command: str) -> tuple[RunOption, ...]:
    """The backends' options ``command`` takes."""
    return for_command(backends.options(), command)


def table() -> tuple[RunOption, ...]:
    """Every declared option of the commands that run, in their help's order."""
    return HEAD + SPEC_OPTIONS + backends.options() + TAIL


def command_options(command: str) -> tuple[RunOption, ...]:
    """The options ``command`` takes, in the order its help shows them."""
    return for_command(table(), command)


def named(name: str) -> RunOption:
    """The declared option of that (Python) name; KeyError otherwise."""
    return {o.name: o for o in table()}[name]


def spec_values(command: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The run parameters among ``command``'s parsed parameters, by name."""
    return values(spec_options(command), params)


def backend_values(command: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The backends' options among ``command``'s parsed parameters, by name."""
    return values(backend_options(command), params)
