"""Old spellings of renamed command-line options, kept working for one release.

A renamed option's old spelling is a hidden :class:`OldName` beside the new option: given on the
command line, it passes its value (or, for an old flag that stood for an option with a value, that
value) to the new option as if that had been typed, and prints one line on stderr naming the new
spelling. It is never shown by ``--help``. The value is checked by the new option's own type, so
the old spelling accepts exactly what the new one does. CHANGELOG.md lists every rename.

Only click is imported: every command module of chaos.cli declares its old spellings with
:func:`old_name`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import click

__all__ = ["OldName", "old_name", "warn_renamed"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str) -> None:
    """The one line a deprecated spelling prints on stderr."""
    click.secho(
        f"chaos: warning: {old} is deprecated, use {new} (the old spelling goes in the next "
        "release)",
        fg="yellow",
        err=True,
    )


class OldName(click.Option):
    """The old spelling of the option ``new`` of the same command (hidden, warns, forwards).

    ``flag``: both spellings are flags; ``multiple``: both are repeatable. ``value``: the old
    spelling is a flag that stood for ``new`` with this value (``--lab-report`` for
    ``--scenarios all``). ``key``: the old spelling became one key of the repeatable
    ``KEY=VALUE`` option ``new`` (a knob that moved into a workload's declared options:
    ``--ack-wait 1`` is ``-o ack_wait=1``, checked by the workload's declaration). Giving both
    spellings with different values is a usage error.
    """

    def __init__(
        self,
        param_decls: Sequence[str],
        *,
        new: str,
        value: str | None = None,
        flag: bool = False,
        multiple: bool = False,
        key: str | None = None,
        **kwargs: Any,
    ) -> None:
        (old,) = param_decls
        self.old, self.new, self.value, self.key = old, new, value, key
        shown = new if value is None else f"{new} {value}"
        shown = shown if key is None else f"{new} {key}=VALUE"
        super().__init__(
            [old, "deprecated_" + old.lstrip("-").replace("-", "_")],
            hidden=True,
            expose_value=False,
            multiple=multiple,
            help=f"Deprecated spelling of {shown}.",
            # a flag only when declared one: click reads is_flag=False as "a flag that needs a
            # value" and would then take "-1" for an option, not the value
            **({"is_flag": True} if flag or value is not None else {}),
            **kwargs,
        )
        self.shown = shown

    def _target(self, ctx: click.Context) -> click.Parameter:
        for p in ctx.command.params:
            if isinstance(p, click.Option) and self.new in p.opts:
                return p
        raise AssertionError(f"{self.old}: the command has no {self.new}")  # a declaration bug

    def handle_parse_result(
        self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]
    ) -> tuple[Any, list[str]]:
        # Given options are processed before the ones left out (click's processing order), so
        # the new option, unless typed too, reads the value put here as if it had been typed.
        if self.name in opts and self.key is not None:
            self._into_key(ctx, opts)
        elif self.name in opts:
            target = self._target(ctx)
            given = opts[self.name] if self.value is None else self.value
            if target.name in opts and opts[target.name] != given:
                raise click.BadOptionUsage(
                    self.old, f"{self.old} is the old spelling of {self.new}: give {self.new} only"
                )
            cast(dict[str, Any], opts)[target.name] = given  # the parser's dict, read by all
            if not ctx.resilient_parsing:  # shell completion parses quietly
                warn_renamed(self.old, self.shown)
        return super().handle_parse_result(ctx, opts, args)

    def _into_key(self, ctx: click.Context, opts: Mapping[str, Any]) -> None:
        """``--old V`` becomes one more ``new KEY=V`` (new is repeatable, KEY=VALUE)."""
        target = self._target(ctx)
        given = opts[self.name]
        pairs = list(opts.get(target.name) or ())
        if any(str(p).partition("=")[0].strip() == self.key for p in pairs):
            raise click.BadOptionUsage(
                self.old,
                f"{self.old} is the old spelling of {self.new} {self.key}=VALUE: give "
                f"{self.new} {self.key}=VALUE only",
            )
        pair = f"{self.key}={given}"
        if target.name in ctx.params:  # typed before the old spelling: already processed
            ctx.params[target.name] = (*ctx.params[target.name], pair)
        else:
            cast(dict[str, Any], opts)[target.name] = [*pairs, pair]
        if not ctx.resilient_parsing:
            warn_renamed(self.old, f"{self.new} {self.key}={given}")


def old_name(
    old: str,
    *,
    new: str,
    value: str | None = None,
    flag: bool = False,
    multiple: bool = False,
    key: str | None = None,
) -> Callable[[F], F]:
    """Declare ``old`` as the deprecated spelling of the command's option ``new`` (see OldName)."""

    def add(f: F) -> F:
        return click.option(
            old, cls=OldName, new=new, value=value, flag=flag, multiple=multiple, key=key
        )(f)

    return add
