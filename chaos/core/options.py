"""A workload's own ``-o KEY=VALUE`` options, declared once (as a Jepsen test declares its CLI
options): the record, the one validator, and the texts derived from the declarations.

A workload lists its :class:`WorkloadOption` records (the :class:`~chaos.core.capabilities.
WorkloadOptions` capability); ``chaos run``'s help, the grade matrix's check and the docs' option
tables are all made from that list, so an option added there is known everywhere.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the command line imports this module
    from chaos.histories.ops import JSONValue

__all__ = ["WorkloadOption", "help_line", "markdown_table", "parse", "stored"]


@dataclass(frozen=True, slots=True)
class WorkloadOption:
    """One option: its name, the type of its value (``int``, ``float`` or ``str``), its default
    (None: none, or one the workload derives, which ``help`` then says), what it does, and what it
    accepts: ``choices`` (exact words) or a range ``low``..``high`` (either bound may be left
    out; ``above``: the value must be above ``low``, not equal to it, as a wait that must pass).
    ``metavar`` names the value in ``--help`` where the choices are too many to list."""

    name: str
    kind: type
    default: int | float | str | None
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    metavar: str = "NAME"
    above: bool = False

    def __post_init__(self) -> None:
        if self.kind not in (int, float, str):
            raise TypeError(f"option {self.name}: kind must be int, float or str")
        if self.choices and self.kind is not str:
            raise TypeError(f"option {self.name}: choices are words (kind str)")
        if self.above and self.low is None:
            raise TypeError(f"option {self.name}: above needs low")

    def accepts(self) -> str:
        """What a value may be, as the error and the docs say it."""
        if self.choices:
            if len(self.choices) <= 4:
                return _either(self.choices)
            return "one of " + ", ".join(self.choices)
        noun = {int: "an integer", float: "a number", str: "text"}[self.kind]
        low, high = _num(self.low), _num(self.high)
        few = self.low is not None and self.high is not None and self.high - self.low < 4
        if self.kind is int and few:  # a few values: name them all
            return _either([str(n) for n in range(int(self.low or 0), int(self.high or 0) + 1)])
        if low and high:
            return f"{noun} from {low} to {high}"
        if low:
            return f"{noun} {'>' if self.above else '>='} {low}"
        if high:
            return f"{noun} <= {high}"
        return noun

    def short(self) -> str:
        """The value in a few characters, for ``--help``: ``safe|unsafe``, ``1..3``, ``N>=0``."""
        if self.choices:
            return "|".join(self.choices) if len(self.choices) <= 4 else self.metavar
        if self.kind is str:
            return "TEXT"
        low, high = _num(self.low), _num(self.high)
        if low and high:
            return f"{low}..{high}"
        var = "N" if self.kind is int else "X"
        if low:
            return f"{var}{'>' if self.above else '>='}{low}"
        return f"{var}<={high}" if high else var

    def parse(self, raw: object) -> int | float | str:
        """The typed value of ``raw`` (command-line text, or a YAML scalar); ValueError saying what
        is accepted."""
        text = str(raw).strip()
        if self.kind is str:
            if self.choices and text not in self.choices:
                raise ValueError(f"expected {self.accepts()}")
            return text
        try:
            value: int | float = int(text) if self.kind is int else float(text)
        except ValueError:
            raise ValueError(f"expected {self.accepts()}") from None
        below = self.low is not None and (value <= self.low if self.above else value < self.low)
        if value != value or below:  # NaN, or below the range
            raise ValueError(f"expected {self.accepts()}")
        if self.high is not None and value > self.high:
            raise ValueError(f"expected {self.accepts()}")
        return value


def parse(
    workload: str, declared: Sequence[WorkloadOption], given: Mapping[str, object]
) -> dict[str, int | float | str]:
    """The given options as typed values, every declared option with a default filled in;
    ValueError naming the workload, the option, the value and what is accepted (for an unknown
    name: the closest known one, and the list)."""
    by_name = {o.name: o for o in declared}
    for name in given:
        if name not in by_name:
            known = ", ".join(by_name) if by_name else "none"
            close = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(f"{workload} has no option {name}{hint}; options: {known}")
    out: dict[str, int | float | str] = {
        o.name: o.default for o in declared if o.default is not None
    }
    for name, raw in given.items():
        try:
            out[name] = by_name[name].parse(raw)
        except ValueError as e:
            raise ValueError(f"{workload} option {name}={raw}: {e}") from None
    return out


def stored(
    workload: str, declared: Sequence[WorkloadOption], spec: Mapping[str, JSONValue]
) -> dict[str, int | float | str]:
    """The option values a stored ``spec.json`` recorded, read back through the declarations
    that wrote them (:func:`parse`): its ``options``, and, for a run stored before the workloads
    declared their own knobs, a declared option the spec kept at its top level (a field of the
    framework's spec then, e.g. ``ack_wait``). ValueError naming the workload, option and value,
    as for a command line."""
    recorded = spec.get("options")
    if recorded is None:
        recorded = {}
    if not isinstance(recorded, Mapping):
        raise ValueError(f"field 'options': expected an object, got {type(recorded).__name__}")
    given = {o.name: spec[o.name] for o in declared if spec.get(o.name) is not None}
    given.update(recorded)
    return parse(workload, declared, given)


def help_line(workload: str, declared: Sequence[WorkloadOption]) -> str:
    """One workload's options for ``--help``: ``lab3: set_size=1..3``."""
    return f"{workload}: " + ", ".join(f"{o.name}={o.short()}" for o in declared)


def markdown_table(declared: Sequence[WorkloadOption]) -> str:
    """The docs' table of a workload's options (kept equal to the declarations by a unit test)."""
    lines = ["| option | value | default | what it does |", "|---|---|---|---|"]
    for o in declared:
        shown = _num(o.default) if isinstance(o.default, int | float) else o.default
        default = "—" if shown is None else f"`{shown}`"
        lines.append(f"| `{o.name}` | {o.accepts()} | {default} | {o.help} |")
    return "\n".join(lines) + "\n"


def _num(x: float | None) -> str:
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else str(x)


def _either(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
