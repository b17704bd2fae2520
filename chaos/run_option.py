"""An option of ``chaos run`` declared once, as data (as Jepsen's test option spec is): its name,
its type (the range comes with it), its default, its help, the commands that take it and whether
a grade matrix may set it. The command line, the requests, the stored spec and the grade matrix
are all made from these records; nothing restates one. The types are plain data too: the command
line (chaos.cli.options) makes its click options and types from them.

A run parameter stored with the run is declared as a field of ``TestSpec`` with
:func:`run_option`; a backend declares its own (the SSH backend's ``nodes_file``) as a tuple of
:class:`RunOption`. This module sits at the bottom of the layers so that both can.
"""

from __future__ import annotations

import builtins
import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "BOTH",
    "FLAG",
    "POSITIVE",
    "RUN",
    "SECONDS",
    "SECONDS_OR_NONE",
    "SEED",
    "SEED_SPAN",
    "TEXT",
    "Choice",
    "Flag",
    "Number",
    "OptionType",
    "PathOf",
    "RunOption",
    "Text",
    "declared",
    "for_command",
    "new_seed",
    "run_option",
    "values",
]


@dataclass(frozen=True, slots=True)
class Number:
    """An int or a float, within ``min`` .. ``max`` (None: unbounded; ``min_open``: ``min``
    itself refused)."""

    kind: builtins.type[int] | builtins.type[float]
    min: float | None = None
    max: float | None = None
    min_open: bool = False


@dataclass(frozen=True, slots=True)
class Choice:
    """One of ``choices``."""

    choices: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PathOf:
    """A path: a file, a folder, or either; ``exists``: it must already."""

    file_okay: bool = True
    dir_okay: bool = True
    exists: bool = False


@dataclass(frozen=True, slots=True)
class Text:
    """Any string."""


@dataclass(frozen=True, slots=True)
class Flag:
    """On when given, off otherwise."""


OptionType = Number | Choice | PathOf | Text | Flag

TEXT = Text()
FLAG = Flag()
# The types of the numeric options: a value out of range is refused while the command line is
# parsed, before any command body runs (so before any container, network or folder exists).
SECONDS = Number(float, min=0, min_open=True)  # a duration that must pass: > 0
SECONDS_OR_NONE = Number(float, min=0)  # >= 0
POSITIVE = Number(int, min=1)
SEED = Number(int, min=0)
# the seeds chaos draws or derives itself (a run's, a grade's, an explore probe's): 1 to
# SEED_SPAN - 1, positive and within 31 bits
SEED_SPAN = 2**31 - 1


def new_seed() -> int:
    """A seed drawn for a run or a grade that was given none (printed, so that it can be made
    again)."""
    return random.SystemRandom().randrange(1, SEED_SPAN)


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
    whoever writes it); ``value`` the type a matrix gives it, where its type does not say (a
    repeatable option takes a list, ``-o`` a mapping). An empty ``help`` is derived from the
    registries when shown (the command line supplies it: a heavy import)."""

    name: str = ""
    type: OptionType
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
        if isinstance(self.type, Number):
            return self.type.kind
        if isinstance(self.type, Flag):
            return bool
        return Path if isinstance(self.type, PathOf) else str


def run_option(
    default: T,
    type: OptionType,
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
