"""The click options of the declared run options (chaos.run_option): each declaration's type,
plain data there, becomes click's own (IntRange, FloatRange, Choice, Path), so that a value out
of range is refused while the command line is parsed, before any command body runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from chaos.core import run_options
from chaos.run_option import Choice, Flag, Number, OptionType, PathOf, RunOption

__all__ = ["NodesCount", "click_option", "click_type", "declared", "given", "store_option"]


def click_type(t: OptionType) -> click.ParamType:
    """Click's type for a declared one."""
    if isinstance(t, Number):
        rng = click.IntRange if t.kind is int else click.FloatRange
        return rng(min=t.min, max=t.max, min_open=t.min_open)
    if isinstance(t, Choice):
        return click.Choice(list(t.choices))
    if isinstance(t, PathOf):
        return click.Path(
            path_type=Path, file_okay=t.file_okay, dir_okay=t.dir_okay, exists=t.exists
        )
    return click.BOOL if isinstance(t, Flag) else click.STRING


def click_option(o: RunOption, **override: Any) -> Callable[[Any], Any]:
    """The click option of a command that takes ``o``; ``override`` changes a keyword of
    ``click.option`` (a command's own type or parameter name, a derived help)."""
    kwargs: dict[str, Any] = dict(
        type=click_type(o.type),
        default=o.default,
        show_default=o.show_default,
        help=o.help,
        metavar=o.metavar,
    )
    for word in ("multiple", "is_flag", "hidden"):
        if getattr(o, word):
            kwargs[word] = True
    dest = override.pop("dest", o.name)
    kwargs.update(override)
    names = [o.flag, *([o.short] if o.short else []), dest]
    return click.option(*names, **kwargs)


def declared(options: Sequence[RunOption], /, **override: dict[str, Any]) -> Any:
    """The click options of declared run options, in their order; ``override``: by option name,
    a keyword of ``click.option`` one command sets its own way."""

    def apply(f: Any) -> Any:
        for o in reversed(options):
            f = click_option(o, **dict(override.get(o.name, {})))(f)
        return f

    return apply


def store_option(f: Any) -> Any:
    return click_option(run_options.named("store"))(f)


class NodesCount(click.IntRange):
    """``--nodes``: a count >= 1; for one release also an existing file, the deprecated spelling
    of ``--nodes-file FILE`` (passed on as a Path, for the command to warn about)."""

    def __init__(self) -> None:
        super().__init__(min=1)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = value.strip().lstrip("+-").isdigit() if isinstance(value, str) else True
        if not number and Path(value).is_file():
            return Path(value)
        return super().convert(value, param, ctx)


def given(name: str, value: Any) -> Any:
    """``value`` if the option was typed, else None (its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return value if source is click.core.ParameterSource.COMMANDLINE else None
