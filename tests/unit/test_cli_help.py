"""Every command of the `chaos` tree says what each of its options means and shows an example.

The tree is walked, not listed: a new command or option without help text or an example fails
here. Each example is parsed by the command it names, so an example cannot name an option that
does not exist, nor a deprecated spelling.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from chaos.cli import main
from chaos.cli.deprecation import OldName
from chaos.cli.helps import LazyHelp
from chaos.cli.model_check import check_file_command


def walk(
    cmd: click.Command, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from walk(sub, (*path, name))


# the whole tree, and the `--model` command `chaos check` hands a history file to
COMMANDS = [*walk(main, ("chaos",)), (("chaos", "check", "--model"), check_file_command)]
IDS = [" ".join(p) for p, _ in COMMANDS]


def test_the_walk_sees_every_command() -> None:
    """The walk is what the other tests stand on: it must reach groups and their subcommands."""
    names = {" ".join(p) for p, _ in COMMANDS}
    for expected in ("chaos", "chaos run", "chaos sandbox up", "chaos image build", "chaos serve"):
        assert expected in names
    assert len(names) >= 15


def _help_of(opt: click.Option, ctx: click.Context) -> str:
    """The option's own text (without click's "[default: ...]"), hidden ones included."""
    if isinstance(opt, LazyHelp):  # computed when help is shown
        opt.get_help_record(ctx)
    return opt.help or ""


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_every_option_has_a_help_text(path: tuple[str, ...], cmd: click.Command) -> None:
    ctx = click.Context(cmd, info_name=path[-1])
    missing = []
    for p in cmd.get_params(ctx):
        if isinstance(p, click.Option):
            text = _help_of(p, ctx)
            if not text.strip():
                missing.append(p.opts[0])
    assert not missing, f"{' '.join(path)}: options without help: {missing}"


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_every_command_says_what_it_does_and_shows_examples(
    path: tuple[str, ...], cmd: click.Command
) -> None:
    assert (cmd.help or "").strip(), f"{' '.join(path)}: no description"
    epilog = cmd.epilog or ""
    assert epilog.startswith("\b\nExamples:\n"), f"{' '.join(path)}: no example epilog"
    lines = epilog.splitlines()[2:]
    assert lines and all(x.startswith("  chaos ") for x in lines), lines
    # the examples of a command show that command (a group's, any of its own)
    prefix = " ".join(path[:2] if path[-1] == "--model" else path)
    assert any(x.strip().startswith(prefix) for x in lines), (prefix, lines)
    # shown as written: click keeps the lines of a \b paragraph
    shown = cmd.get_help(click.Context(cmd, info_name=path[-1]))
    for x in lines:
        assert x.strip() in shown


def _resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command an example names, and the arguments it gives that command."""
    cmd: click.Command = main
    rest = words[1:]
    while isinstance(cmd, click.Group) and rest and rest[0] in cmd.commands:
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    return cmd, rest


EXAMPLES = [line.strip() for _, cmd in COMMANDS for line in (cmd.epilog or "").splitlines()[2:]]


@pytest.fixture
def example_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files and folders the examples name, for the options that must see them exist."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodes.yaml").write_text("nodes: []\n")
    for folder in ("tls", "grades/2026-12-01-lab3", "submissions"):
        (tmp_path / folder).mkdir(parents=True)


def _parse(example: str) -> None:
    words = shlex.split(example)
    cmd, rest = _resolve(words)
    if isinstance(cmd, click.Group):  # `chaos COMMAND -h`
        assert rest and rest[0] in ("COMMAND", "-h", "--help"), example
        return
    old = {o for p in cmd.params if isinstance(p, OldName) for o in p.opts}
    assert not old & set(rest), f"{example}: a deprecated spelling"
    cmd.make_context(words[-1], list(rest))  # every value through its option's type


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.usefixtures("example_files")
def test_every_example_parses_with_the_current_names(example: str) -> None:
    _parse(example)


@pytest.mark.usefixtures("example_files")
def test_an_example_with_a_wrong_option_or_value_would_fail() -> None:
    with pytest.raises(click.NoSuchOption):
        _parse("chaos run lab3 --nemsis pause")
    with pytest.raises(click.BadParameter):
        _parse("chaos run lab3 --tasks 0")
    with pytest.raises(AssertionError, match="deprecated"):
        _parse("chaos explore lab3 --all")


def test_the_checks_fail_on_an_option_without_help_and_a_command_without_examples() -> None:
    @click.command(epilog="Runs things.")
    @click.option("--bare", default=1, show_default=True)
    def bare(bare: int) -> None:
        """Does a thing."""

    with pytest.raises(AssertionError, match="--bare"):
        test_every_option_has_a_help_text(("chaos", "bare"), bare)
    with pytest.raises(AssertionError, match="no example epilog"):
        test_every_command_says_what_it_does_and_shows_examples(("chaos", "bare"), bare)
