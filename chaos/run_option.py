"""An option of ``chaos run`` declared once, as data (as Jepsen's test option spec is): its name,
its click type (the range comes with it), its default, its help, the commands that take it and
whether a grade matrix may set it. The command line, the requests, the stored spec and the grade
matrix are all made from these records; nothing restates one.

A run parameter stored with the run is declared as a field of ``TestSpec`` with
:func:`run_option`; a backend declares its own (the SSH backend's ``nodes_file``) as a tuple of
:class:`RunOption`. This module sits at the bottom of the layers so that both can.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = [
    "BOTH",
    "POSITIVE",
    "RUN",
    "SECONDS",
    "SECONDS_OR_NONE",
    "SEED",
    "SEED_SPAN",
    "RunOption",
    "declared",
    "for_command",
    "run_option",
    "values",
]

# The types of the numeric options: a value out of range is refused by click while it parses the
# command line, before any command body runs (so before any container, network or folder exists).
SECONDS = click.FloatRange(min=0, min_open=True)  # a duration that must pass: > 0
SECONDS_OR_NONE = click.FloatRange(min=0)  # >= 0
POSITIVE = click.IntRange(min=1)
SEED = click.IntRange(min=0)
# the seeds chaos draws or derives itself (a run's, a grade's, an explore probe's): 1 to
# SEED_SPAN - 1, positive and within 31 bits
SEED_SPAN = 2**31 - 1

RUN = frozenset({"run"})
BOTH = frozenset({"run", "explore"})

# the key of a dataclass field's metadata that holds its declaration
KEY = "chaos.run_option"

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOption:
    """One option. ``name`` is the Python name (the field of the spec or the request, the
    backend's keyword, the click parameter); the flag is ``--`` and the name with dashes unless
    ``long`` names it (``--trigger`` sets ``triggers``), ``short`` a one-letter alias.
    ``matrix``: empty when a grade matrix may set it, else why it may not (the matrix says so to
    whoever writes it); ``value`` the type a matrix gives it, where its click type does not say
    (a repeatable option takes a list, ``-o`` a mapping). An empty ``help`` is derived from the
    registries when shown (the command line supplies it: a heavy import)."""

    name: str = ""
    type: click.ParamType
    default: Any
    help: str
    commands: frozenset[str] = BOTH
    matrix: str = ""
    metavar: str | None = None
    show_default: bool = False
    long: str = ""
    short: str = ""
    multiple: bool = False
    is_flag: bool = False
    hidden: bool = False
    value: builtins.type | None = None

    @property
    def flag(self) -> str:
        return "--" + (self.long or self.name.replace("_", "-"))

    @property
    def key(self) -> str:
        """The option's name in a grade matrix (the flag without its dashes)."""
        return self.flag[2:]

    def kind(self) -> builtins.type:
        """The type of the value a grade matrix gives it."""
        if self.value is not None:
            return self.value
        if isinstance(self.type, click.types.IntParamType):
            return int
        if isinstance(self.type, click.types.FloatParamType):
            return float
        return Path if isinstance(self.type, click.Path) else str

    def click_option(self, **override: Any) -> Callable[[Any], Any]:
        """The click option of a command that takes it; ``override`` changes a keyword of
        ``click.option`` (a command's own type or parameter name, a derived help)."""
        kwargs: dict[str, Any] = dict(
            type=self.type,
            default=self.default,
            show_default=self.show_default,
            help=self.help,
            metavar=self.metavar,
        )
        for word in ("multiple", "is_flag", "hidden"):
            if getattr(self, word):
                kwargs[word] = True
        dest = override.pop("dest", self.name)
        kwargs.update(override)
        names = [self.flag, *([self.short] if self.short else []), dest]
        return click.option(*names, **kwargs)


def run_option(
    default: T,
    type: click.ParamType,
    help: str,
    *,
    commands: frozenset[str] = BOTH,
    matrix: str = "",
) -> T:
    """A dataclass field that is also an option of ``chaos run``: its default, and its
    declaration in the field's metadata (read back by :func:`declared`)."""
    option = RunOption(
        type=type,
        default=default,
        help=help,
        commands=commands,
        matrix=matrix,
        show_default=default is not None,
    )
    field: T = dataclasses.field(default=default, metadata={KEY: option})
    return field


def declared(cls: type) -> tuple[RunOption, ...]:
    """The options a dataclass declares with :func:`run_option`, named, in field order."""
    return tuple(
        dataclasses.replace(f.metadata[KEY], name=f.name)
        for f in dataclasses.fields(cls)
        if KEY in f.metadata
    )


def for_command(options: tuple[RunOption, ...], command: str) -> tuple[RunOption, ...]:
    return tuple(o for o in options if command in o.commands)


def values(options: tuple[RunOption, ...], params: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``options`` among a command's parsed parameters."""
    return {o.name: params[o.name] for o in options if o.name in params}
