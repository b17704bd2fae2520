"""Nothing outside a workload names a lab or a solution, and the framework's spec holds no
workload's knob (issue 24, item 1; docs/architecture.md, "each fact once").

Every module of ``chaos/`` outside ``chaos/workloads/`` is parsed: no string in its code and no
identifier may be a shipped workload's name (``lab1``, ``etcd-register``) or one of a workload's
built-in solutions (``ack-before-commit``): what the framework says about them is derived from
the workloads (``--solution``'s help from their ``solutions()``, ``-o``'s from their declared
options). Docstrings and comments may use a lab as an example; code may not. The names are read
from the registry, so a new workload or solution is held to it at once.

What stays, each with why, is :data:`ALLOWED`; an entry that no longer matches anything fails
the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cli.deprecation import OldName
from chaos.core.capabilities import Solutions, options_of
from chaos.core.solution import REFERENCE
from chaos.core.spec import TestSpec
from chaos.workloads import registry
from tests.unit.test_cli_help import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORK = sorted(
    p for p in (ROOT / "chaos").rglob("*.py") if "workloads" not in p.relative_to(ROOT).parts
)

# (file under chaos/, the word) -> why it may stay
ALLOWED: dict[tuple[str, str], str] = {
    # Elle's anomaly (Adya's P4), which lab3's solution of that name plants: the checkers name
    # the anomaly, not the solution
    ("checkers/elle/check.py", "lost-update"): "an Elle anomaly's name",
    ("checkers/elle/list_append.py", "lost-update"): "an Elle anomaly's name",
    ("checkers/elle/rw_register.py", "lost-update"): "an Elle anomaly's name",
    ("checkers/elle/lattice.py", "lost-update"): "an Elle anomaly's name",
}


def _names() -> set[str]:
    """Every shipped workload's name and built-in solution's, in both spellings (``-``/``_``),
    but the reference's: the framework's name for a workload's correct solution (TestSpec's
    default, the grade's control kind), which every lab ships (Solutions' contract)."""
    found = set(registry.BUILTIN)
    for make in registry.BUILTIN.values():
        wl = make()
        if isinstance(wl, Solutions):
            found |= set(wl.solutions())
    found.discard(REFERENCE)
    return found | {n.replace("-", "_") for n in found}


NAMES = _names()
_ALTERNATIVES = "|".join(map(re.escape, sorted(NAMES, key=len, reverse=True)))
WORD = re.compile(rf"(?<![\w-])({_ALTERNATIVES})(?![\w-])")
# in an identifier a name is a part between underscores: ``lab1_nights``
PART = re.compile(rf"(?<![A-Za-z0-9])({_ALTERNATIVES})(?![A-Za-z0-9])")


def _examples(tree: ast.AST) -> set[int]:
    """The strings of a command's examples (its ``epilog``, or ``examples(...)``'s arguments): an
    example must name a real workload to be runnable (tests/unit/test_cli_help.py parses each
    with the command it names)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST] = []
        if isinstance(node, ast.keyword) and node.arg == "epilog":
            parts = [node.value]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "examples":
            parts = list(node.args)
        out |= {id(n) for part in parts for n in ast.walk(part)}
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
    return out


def _found(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, word, where) for each workload or solution name in the module's code."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _examples(tree) | _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for m in WORD.finditer(node.value):
                yield node.lineno, m[1], repr(node.value[:60])
        texts = []
        if isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            texts = [node.name]
        elif isinstance(node, ast.arg):
            texts = [node.arg]
        for text in texts:
            for m in PART.finditer(text):
                yield node.lineno, m[1], f"identifier {text}"


def test_the_names_are_read_from_the_workloads() -> None:
    """The search must have something to find: both labs, a generic workload, the solutions."""
    assert {"lab1", "lab3", "etcd-register", "ack-before-commit", "no-fencing"} <= NAMES
    assert REFERENCE not in NAMES


def test_no_framework_module_names_a_workload_or_a_solution() -> None:
    found = []
    used = set()
    for path in FRAMEWORK:
        rel = str(path.relative_to(ROOT / "chaos"))
        for line, word, where in _found(path):
            if (rel, word) in ALLOWED:
                used.add((rel, word))
            else:
                found.append(f"chaos/{rel}:{line}: {word} ({where})")
    assert not found, "derive these from the workloads instead:\n" + "\n".join(found)
    assert used == set(ALLOWED), f"no longer needed, drop: {set(ALLOWED) - used}"


def test_the_search_finds_a_name_planted_in_code(tmp_path: Path) -> None:
    """The control: a solution's name in a help string, a workload's in an identifier and in a
    comparison are found; the same words in a docstring, a comment or an example are not."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""lab3 as an example."""\n'
        "# lab1 in a comment\n"
        'HELP = "lab3: reference, check-then-act"\n'
        "def f(name, lab1_nights):\n"
        '    """A docstring on lab1."""\n'
        '    return name == "etcd-register"\n'
        'E = examples("chaos run lab1")\n'
    )
    found = {(line, word) for line, word, _ in _found(planted)}
    assert found == {(3, "lab3"), (3, "check-then-act"), (4, "lab1"), (6, "etcd-register")}


def test_the_frameworks_spec_holds_no_workloads_knob() -> None:
    """A workload's knob is its declared option, never a field of TestSpec (core knows none)."""
    fields = {f.name for f in dataclasses.fields(TestSpec)}
    for name, make in registry.BUILTIN.items():
        knobs = {o.name for o in options_of(make())}
        assert not fields & knobs, f"{name}: {fields & knobs} are TestSpec fields"


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_a_moved_knobs_old_spelling_names_a_declared_option(
    path: tuple[str, ...], cmd: object
) -> None:
    """``--ack-wait`` stays one release as ``-o ack_wait=``: the key it forwards to must be an
    option some shipped workload declares (else the old spelling would always be refused)."""
    declared = {o.name for make in registry.BUILTIN.values() for o in options_of(make())}
    for p in getattr(cmd, "params", []):
        if isinstance(p, OldName) and p.key is not None:
            assert p.key in declared, (path, p.opts)
