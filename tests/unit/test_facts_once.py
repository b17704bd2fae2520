"""Each fact of chaos is written in one place: the exit statuses (chaos/exits.py), the nodes' names
(chaos/cluster/base.py), a constant's value (one module defines it, the others import it).

These read the source: a second copy of a fact is a line of code, so the tests look for the
shape of that line. Each has a planted example that it must catch, so that a test that could
never fail does not pass for one that works.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the labs' solutions are a student's code, not chaos's
SOURCES = sorted(p for p in (REPO / "chaos").rglob("*.py") if "solutions" not in p.parts)


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple(
        (str(p.relative_to(REPO)), ast.parse(p.read_text(encoding="utf-8"))) for p in SOURCES
    )


def _trees() -> Iterator[tuple[str, ast.Module]]:
    yield from _parsed()


# -- exit statuses: chaos/exits.py only -------------------------------------------------------

_EXITS = {"exit", "_exit", "SystemExit"}


def _numbered_exits(tree: ast.AST) -> list[int]:
    """Lines that exit with a number written there (``sys.exit(1)``, ``ctx.exit(2)``, ``raise
    SystemExit(3)``) rather than a member of :class:`chaos.exits.Exit`."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        arg = node.args[0]
        if name in _EXITS and isinstance(arg, ast.Constant) and type(arg.value) is int:
            out.append(node.lineno)
    return out


def test_no_module_exits_with_a_number_of_its_own() -> None:
    found = [
        f"{path}:{line}"
        for path, tree in _trees()
        if path != "chaos/exits.py"
        for line in _numbered_exits(tree)
    ]
    assert found == [], "exit with a member of chaos.exits.Exit, not a number"


def test_a_numbered_exit_is_seen() -> None:
    planted = "import sys\nsys.exit(2)\nraise SystemExit(3)\nctx.exit(1)\nsys.exit(Exit.VALID)\n"
    assert _numbered_exits(ast.parse(planted)) == [2, 3, 4]


# -- node names: chaos/cluster/base.py's node_name only ---------------------------------------


def _node_names_made(tree: ast.AST) -> list[int]:
    """Lines that make a node's name from a number themselves (``f"n{i}"``, ``f"x-n{i}"``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        for before, after in zip(node.values, node.values[1:], strict=False):
            if (
                isinstance(before, ast.Constant)
                and isinstance(after, ast.FormattedValue)
                and isinstance(before.value, str)
                and before.value.endswith("n")
                and not before.value[:-1][-1:].isalnum()
            ):
                out.append(node.lineno)
    return out


def test_nodes_are_named_in_one_place() -> None:
    found = [
        f"{path}:{line}"
        for path, tree in _trees()
        if path != "chaos/cluster/base.py"
        for line in _node_names_made(tree)
    ]
    assert found == [], "name nodes with chaos.cluster.base.node_name / node_names"


def test_a_node_name_made_by_hand_is_seen() -> None:
    planted = 'a = f"n{i}"\nb = f"chaos-{run}-n{i}"\nc = f"in{x}"\nd = f"{n}"\n'
    assert _node_names_made(ast.parse(planted)) == [1, 2]


def test_node_names_are_n1_to_nN() -> None:
    from chaos.cluster.base import node_names
    from chaos.cluster.fake import FakeCluster

    assert node_names(3) == ["n1", "n2", "n3"]
    assert FakeCluster(nodes=4).nodes == node_names(4)


# -- constants: one module defines each -------------------------------------------------------

# Public module constants of the same name and the same value in two modules, that are two facts
# rather than one: each entry says why. Everything else found twice is one fact written twice.
APART = {
    # each checker's own cap on the evidence it lists
    "SHOWN": "a display cap per checker",
    # the Docker and the SSH backend's own source folders and image recipes (the SSH backend is
    # being made independent of the Docker one: see issue #24, item 2)
    "SRC_DIR": "each backend's",
    "RECIPE_VERSION": "two recipes, versioned apart",
    # lab1's outcome words, read by its checkers (chaos/workloads/lab1/checkers.py is being split)
    "APPLIED": "lab1's checkers are being split",
    "STALE": "lab1's checkers are being split",
    # the proxy journals (chaos/node: runs on the nodes, imports nothing of workloads) and the
    # replay of etcd's record truncate long values alike
    "MAX_VALUE": "the proxy's journal and the record's replay",
    "ROOT_UID": "uid 0",
}


def _constants(tree: ast.Module) -> Iterator[tuple[str, str]]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        # a value that names its own module (``Path(__file__)``) differs in each; a type
        # variable is a module's own name for "some type", no fact
        own = any(
            isinstance(n, ast.Name) and n.id in ("__file__", "TypeVar") for n in ast.walk(value)
        )
        if isinstance(target, ast.Name) and target.id.isupper() and target.id[0] != "_" and not own:
            yield target.id, ast.unparse(value)


def _written_twice(trees: list[tuple[str, ast.Module]]) -> dict[tuple[str, str], list[str]]:
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, tree in trees:
        for name, value in _constants(tree):
            where[(name, value)].append(path)
    return {k: v for k, v in where.items() if len(v) > 1 and k[0] not in APART}


def test_a_constant_is_defined_in_one_module() -> None:
    assert _written_twice(list(_trees())) == {}, "define it once and import it"


def test_a_constant_written_twice_is_seen() -> None:
    a = ast.parse("DEFAULT_TIME_LIMIT = 60.0\nSHOWN = 50\n")
    b = ast.parse("DEFAULT_TIME_LIMIT = 60.0\nSHOWN = 50\nOTHER = 1\n")
    assert _written_twice([("a.py", a), ("b.py", b)]) == {
        ("DEFAULT_TIME_LIMIT", "60.0"): ["a.py", "b.py"]
    }


@pytest.mark.parametrize("name", sorted(APART))
def test_each_exception_is_still_written_twice(name: str) -> None:
    """An exception that no longer applies leaves the list, so the list only shrinks."""
    counts: dict[str, int] = defaultdict(int)
    for _, tree in _trees():
        for n, value in _constants(tree):
            if n == name:
                counts[value] += 1
    assert any(c > 1 for c in counts.values()), f"{name} is written once now: drop it from APART"


# -- derived defaults -------------------------------------------------------------------------


def test_the_fault_duration_default_is_derived_once() -> None:
    from chaos.core.capabilities import fault_seconds
    from chaos.core.spec import TestSpec
    from chaos.workloads.jetstream_queue import JetStreamQueue
    from chaos.workloads.lab1.workload import Lab1
    from chaos.workloads.lab3.workload import Lab3

    assert TestSpec(workload="x").fault_seconds() == 5.0
    # the workload's takeover wait (its AckWait option), else the default one
    assert fault_seconds(Lab3(), TestSpec(workload="lab3")) == 5.0
    assert fault_seconds(Lab3(), TestSpec(workload="lab3", options={"ack_wait": "4"})) == 7.0
    q = TestSpec(workload="jetstream-queue", options={"ack_wait": "1"})
    assert fault_seconds(JetStreamQueue(), q) == 4.0
    assert fault_seconds(Lab1(), TestSpec(workload="lab1")) == 5.0
    given = TestSpec(workload="lab3", options={"ack_wait": "4"}, fault_duration=1.0)
    assert fault_seconds(Lab3(), given) == 1.0
    assert TestSpec(workload="x", pause_duration=1.5).fault_seconds() == 1.5
    assert TestSpec(workload="x", pause_duration=1.5, fault_duration=0.5).fault_seconds() == 0.5


def test_the_grade_bounds_a_run_by_chaos_runs_own_defaults() -> None:
    from chaos.core.spec import TestSpec
    from chaos.grade.matrix import Config

    spec = TestSpec(workload="x")
    assert Config(name="c").time_bound() == spec.time_limit + spec.recovery_timeout


def test_the_labs_share_one_found() -> None:
    from chaos.node.store import found
    from chaos.workloads.lab1 import protocol_api as lab1
    from chaos.workloads.lab3 import protocol_api as lab3

    assert lab1.found is found and lab3.found is found
    assert found([(b'{"a": 1}', None)]) == {"a": 1} and found([]) is None


# -- the control channel: asked once ----------------------------------------------------------


def _asks_for_channel(tree: ast.AST) -> list[int]:
    """Lines that ask ``isinstance(..., ControlChannel)`` themselves."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        and "ControlChannel" in ast.unparse(node.args[1])
    ]


def test_the_control_channel_is_asked_for_once() -> None:
    """Everyone else uses ``RunContext.channel``, which the orchestrator fills from
    ``chaos.cluster.base.control_channel``."""
    found = [
        f"{path}:{line}"
        for path, tree in _trees()
        if path != "chaos/cluster/base.py"
        for line in _asks_for_channel(tree)
    ]
    assert found == []
    assert _asks_for_channel(ast.parse("if isinstance(ctx.cluster, ControlChannel): pass")) == [1]
