"""Only the command line exits (issue 33): the checkers, the report, the grade and the run are
functions that return or raise, and chaos/cli/ maps what they answer to chaos.exits' statuses.

The test reads the source for the shapes of an exit (``sys.exit``, ``os._exit``, ``ctx.exit``,
``raise SystemExit``, click's exceptions, which click turns into an exit) outside chaos/cli/; a
planted example shows that it sees each. Click itself is kept in chaos/cli/ by an import-linter
contract in pyproject.toml ("click only in the command line").
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "chaos" / "cli"

# Programs of their own, run on the nodes (never by the `chaos` command): their mains end their
# process with a message, as a program's entry point does.
OWN_PROGRAMS = {
    "chaos/node/runtime.py": "the node runtime of a solution's process: a missing variable",
    "chaos/node/etcd_proxy.py": "the etcd proxy started in each node: a port it cannot take",
    "chaos/workloads/lab1/service.py": "lab1's service on a node: its usage line",
    "chaos/workloads/lab3/service.py": "lab3's services on a node: their usage line",
    # a forked run of a grade ends its own process: an exit there is the run's, not the grader's
    "chaos/grade/warm.py": "a grade's forked run, whose fork server died before it was watched",
}


def _exits(tree: ast.AST) -> list[int]:
    """The lines that end the process, or ask click to."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            # click's Exit and Abort by their module (chaos.exits.Exit(code) is a status)
            clicks = isinstance(f, ast.Attribute) and name in ("Exit", "Abort")
            if name in ("exit", "_exit", "SystemExit") or clicks:
                out.append(node.lineno)
        elif isinstance(node, ast.Name | ast.Attribute):
            word = node.id if isinstance(node, ast.Name) else node.attr
            if word == "SystemExit" or word.endswith(("ClickException", "UsageError")):
                out.append(node.lineno)
    return sorted(set(out))


def _sources() -> list[Path]:
    return sorted(
        p
        for p in (REPO / "chaos").rglob("*.py")
        if CLI not in p.parents and "solutions" not in p.parts
    )


def test_nothing_but_the_command_line_exits() -> None:
    found = []
    for p in _sources():
        path = str(p.relative_to(REPO))
        lines = _exits(ast.parse(p.read_text(encoding="utf-8")))
        if lines and path not in OWN_PROGRAMS:
            found += [f"{path}:{n}" for n in lines]
    assert found == [], "return or raise; chaos/cli/ maps the answer to an exit status"


def test_an_exit_is_seen() -> None:
    planted = (
        "import sys, os, click\n"
        "sys.exit(Exit.USAGE)\n"
        "os._exit(1)\n"
        "raise SystemExit('no')\n"
        "raise click.UsageError('no')\n"
        "class Failed(click.ClickException): ...\n"
        "ctx.exit(0)\n"
        "raise click.exceptions.Exit(2)\n"
        "x = Exit(3)\n"
    )
    assert _exits(ast.parse(planted)) == [2, 3, 4, 5, 6, 7, 8]


def test_the_programs_of_their_own_still_exist() -> None:
    """An entry in OWN_PROGRAMS names a file that is there and does exit (no stale excuse)."""
    for path in OWN_PROGRAMS:
        assert _exits(ast.parse((REPO / path).read_text(encoding="utf-8"))), path
