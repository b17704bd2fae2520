"""One name per concept across the commands (issue 22, item 7).

A renamed option keeps its old spelling for one release (chaos.cli.deprecation.OldName): it still
works, says on stderr which spelling replaced it, and is hidden from --help. Every old spelling
the tree declares has a row here, and an option name shared by several commands means the same
there: the same kind of value, the same help text.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from chaos.cli import helps, main
from chaos.cli import run as cli_run
from chaos.cli.deprecation import OldName
from chaos.cli.model_check import check_file_command
from chaos.cli.options import click_type
from chaos.run_option import SECONDS
from tests.unit.test_cli_help import COMMANDS, walk

NODES = "nodes.yaml"  # made in the test's folder: --nodes-file wants a file that exists

# (command, old argv, new argv, the parameter both set, its value, the new spelling named)
RENAMES: list[tuple[tuple[str, ...], list[str], list[str], str, Any, str]] = [
    (("run",), ["lab3", "--report", "l.json"], ["lab3", "--lab-report-out", "l.json"],
     "report_path", Path("l.json"), "--lab-report-out"),
    (("run",), ["lab3", "--lab-report"], ["lab3", "--scenarios", "all"],
     "scenarios", "all", "--scenarios all"),
    (("explore",), ["lab3", "--json", "e.json"], ["lab3", "--json-out", "e.json"],
     "json_path", Path("e.json"), "--json-out"),
    (("explore",), ["lab3", "--all"], ["lab3", "--keep-going"], "try_all", True, "--keep-going"),
    (("check",), ["h.edn", "--time-limit", "5"], ["h.edn", "--search-timeout", "5"],
     "search_timeout", 5.0, "--search-timeout"),
    (("check", "--model"), ["h.edn", "-m", "register", "--time-limit", "5"],
     ["h.edn", "-m", "register", "--search-timeout", "5"], "time_limit", 5.0, "--search-timeout"),
    (("cleanup",), ["--all"], ["--include-live"], "all_runs", True, "--include-live"),
    (("cleanup",), ["--nodes", NODES], ["--nodes-file", NODES],
     "nodes_file", Path(NODES), "--nodes-file"),
    (("sandbox", "up"), ["3", "--out", "n.yaml"], ["3", "--nodes-file", "n.yaml"],
     "out", Path("n.yaml"), "--nodes-file"),
    (("grade",), ["subs", "--lab", "lab3"], ["subs", "--workload", "lab3"],
     "lab", "lab3", "--workload"),
    (("grade-certs",), ["tls", "--host", "g0"], ["tls", "--scheduler-host", "g0"],
     "hosts", ("g0",), "--scheduler-host"),
    # lab knobs that moved into the workload's declared options: one -o pair each
    (("run",), ["lab3", "--ack-wait", "3"], ["lab3", "-o", "ack_wait=3"],
     "options", ("ack_wait=3",), "--option ack_wait=3"),
    (("run",), ["lab3", "--work-seconds", "0.1"], ["lab3", "-o", "work_seconds=0.1"],
     "options", ("work_seconds=0.1",), "--option work_seconds=0.1"),
    (("explore",), ["lab3", "--ack-wait", "3"], ["lab3", "-o", "ack_wait=3"],
     "options", ("ack_wait=3",), "--option ack_wait=3"),
]  # fmt: skip
IDS = [f"{' '.join(c)} {old[-1] if old[-1].startswith('-') else old[-2]}" for c, old, *_ in RENAMES]


def _command(path: tuple[str, ...]) -> click.Command:
    if path == ("check", "--model"):
        return check_file_command
    cmd: click.Command = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / NODES).write_text("nodes: []\n")


@pytest.mark.parametrize(("path", "old", "new", "param", "value", "shown"), RENAMES, ids=IDS)
def test_an_old_spelling_works_warns_once_and_is_hidden(
    path: tuple[str, ...],
    old: list[str],
    new: list[str],
    param: str,
    value: Any,
    shown: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cmd = _command(path)
    got_new = cmd.make_context(path[-1], list(new)).params
    assert got_new[param] == value
    assert capsys.readouterr().err == ""  # the new spelling says nothing

    got_old = cmd.make_context(path[-1], list(old)).params
    assert got_old == got_new  # exactly what the new spelling gives, nothing else
    err = capsys.readouterr().err.splitlines()
    spelling = next(w for w in old if w.startswith("--") and w not in new)
    assert len(err) == 1 and f"{spelling} is deprecated, use {shown} " in err[0], err

    # hidden from --help, the new spelling shown
    ctx = click.Context(cmd, info_name=path[-1])
    listed = {o for p in cmd.get_params(ctx) if p.get_help_record(ctx) for o in p.opts}
    assert spelling not in listed and shown.split()[0] in listed


def test_every_old_spelling_in_the_tree_has_a_row() -> None:
    declared = {
        (" ".join(p[1:]), o)
        for p, c in COMMANDS
        for param in c.params
        if isinstance(param, OldName)
        for o in param.opts
    }
    tested = {
        (" ".join(c), next(w for w in old if w.startswith("--") and w not in new))
        for c, old, new, *_ in RENAMES
    }
    assert declared == tested


def test_run_nodes_file_is_the_deprecated_spelling_of_nodes_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --nodes FILE` (a count or a file, by its value) warns when it is given a file."""
    params = cli_run.run.make_context("run", ["lab3", "--nodes", NODES]).params
    assert params["nodes_arg"] == Path(NODES)
    assert cli_run._nodes_arg(params["nodes_arg"], None) == (None, Path(NODES))
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--nodes FILE is deprecated, use --nodes-file FILE" in err[0]
    # a count says nothing and is a count; a path that is no file is still refused by the type
    assert cli_run._nodes_arg(cli_run.run.make_context("run", ["lab3", "--nodes", "5"]).params["nodes_arg"], None) == (5, None)  # fmt: skip
    assert capsys.readouterr().err == ""
    with pytest.raises(click.BadParameter):
        cli_run.run.make_context("run", ["lab3", "--nodes", "nope.yaml"])


def test_both_spellings_with_different_values_are_one_usage_error() -> None:
    r = CliRunner().invoke(main, ["explore", "lab3", "--json", "a.json", "--json-out", "b.json"])
    assert r.exit_code == 3
    lines = r.output.splitlines()
    assert len([x for x in lines if x.startswith("chaos: ") and "warning" not in x]) == 1
    assert "--json is the old spelling of --json-out: give --json-out only" in r.output
    # the same value twice is no conflict
    params = cli_run.explore.make_context("explore", ["lab3", "--all", "--keep-going"]).params
    assert params["try_all"] is True


@pytest.mark.parametrize(
    "argv",
    [
        ["lab3", "-o", "set_size=1", "--ack-wait", "3", "--work-seconds", "0"],
        ["lab3", "--ack-wait", "3", "-o", "set_size=1", "--work-seconds", "0"],
        ["lab3", "--work-seconds", "0", "--ack-wait", "3", "-o", "set_size=1"],
    ],
    ids=["-o first", "-o between", "-o last"],
)
def test_a_moved_knob_adds_its_pair_to_the_given_ones_in_any_order(argv: list[str]) -> None:
    """click processes the options in the order typed: the pair is added whether ``-o`` was
    processed before the old spelling or after it."""
    got = cli_run.run.make_context("run", list(argv)).params["options"]
    assert sorted(got) == ["ack_wait=3", "set_size=1", "work_seconds=0"]


def test_a_moved_knob_given_both_ways_is_one_usage_error() -> None:
    r = CliRunner().invoke(main, ["run", "lab3", "-o", "ack_wait=1", "--ack-wait", "3"])
    assert r.exit_code == 3, r.output
    assert "--ack-wait is the old spelling of --option ack_wait=VALUE" in r.output


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "lab3", "--ack-wait", "-1"], "lab3 option ack_wait=-1: expected a number > 0"),
        (["run", "lab3", "--work-seconds", "x"], "lab3 option work_seconds=x: expected a number"),
        # lab1 has no AckWait: the old spelling was accepted and meant nothing there but the
        # default fault's length (--fault-duration says that)
        (["run", "lab1", "--ack-wait", "1"], "lab1 has no option ack_wait"),
    ],
)
def test_a_moved_knob_is_checked_by_the_workloads_declaration(argv: list[str], said: str) -> None:
    r = CliRunner().invoke(main, [*argv, "--store", "s"])
    assert r.exit_code == 3 and said in r.output, r.output
    assert not Path("s").exists()


def test_an_old_spelling_is_checked_by_the_new_options_type() -> None:
    r = CliRunner().invoke(main, ["check", "h.edn", "--time-limit", "-1"])
    assert r.exit_code == 3 and "--search-timeout" in r.output


# Names two commands share for the same concept, yet explain differently, and why.
SAME_CONCEPT_OTHER_WORDS = {
    # sandbox up writes the nodes file the other commands read
    "--nodes-file": {"chaos sandbox up"},
    # an output folder in each, with its own default and contents (check's: what it draws)
    "--out": {"chaos check", "chaos feedback"},
}


def _options_by_name() -> dict[str, list[tuple[str, click.Option]]]:
    """Every long option name the tree shows, with the commands that use it (old spellings
    excepted: for one release an old name may be another command's current one)."""
    seen: dict[str, list[tuple[str, click.Option]]] = defaultdict(list)
    for path, cmd in walk(main, ("chaos",)):
        for p in cmd.params:
            if isinstance(p, click.Option) and not isinstance(p, OldName):
                for o in p.opts:
                    if o.startswith("--"):
                        seen[o].append((" ".join(path), p))
    return seen


def _kind(p: click.Option) -> tuple[Any, ...]:
    t = p.type
    path = (t.file_okay, t.dir_okay) if isinstance(t, click.Path) else ()
    return (p.is_flag, p.multiple, p.nargs, t.name, path)


def test_one_option_name_means_one_thing_in_every_command() -> None:
    clashes = []
    for name, uses in sorted(_options_by_name().items()):
        if len(uses) < 2:
            continue
        kinds = {_kind(p) for _, p in uses}
        if len(kinds) > 1:
            clashes.append(f"{name}: takes different values in {[c for c, _ in uses]}")
        ctx = click.Context(main)
        helps = {
            cli_help(p, ctx) for c, p in uses if c not in SAME_CONCEPT_OTHER_WORDS.get(name, set())
        }
        if len(helps) > 1:
            clashes.append(f"{name}: explained differently: {sorted(helps)}")
    assert not clashes, "\n".join(clashes)


def cli_help(p: click.Option, ctx: click.Context) -> str:
    if isinstance(p, helps.LazyHelp):
        p.get_help_record(ctx)
    return p.help or ""


def test_the_name_check_finds_a_clash() -> None:
    """The check above can fail: the clashes issue 22 listed, as they were, are found."""
    flag = click.Option(["--json"], is_flag=True, help="Results as JSON.")
    path = click.Option(["--json"], type=click.Path(), help="Also write JSON here.")
    assert _kind(flag) != _kind(path)
    workload = click.Option(["--time-limit"], type=click_type(SECONDS), help=helps.TIME_LIMIT_HELP)
    search = click.Option(["--time-limit"], type=click_type(SECONDS), help="Search budget (s).")
    assert _kind(workload) == _kind(search)  # the same kind of value: only the words differ
    ctx = click.Context(main)
    assert cli_help(workload, ctx) != cli_help(search, ctx)
