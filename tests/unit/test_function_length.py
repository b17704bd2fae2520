"""No function of chaos over 60 lines (issue #24's acceptance), outside the labs' solutions: a
student's code, not chaos's.

Offenders were listed with their length while they were split (a listed function could shrink
but not grow, one that fit left the list); the list is empty now, and stays so: any function over
the limit fails here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 60

# "path::qualified name": its length in lines (from its ``def`` line to its last line) today
ALLOWED: dict[str, int] = {}


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def lengths(root: Path = REPO) -> dict[str, int]:
    """Every function of ``root/chaos`` (nested ones too, by their dotted name) and its length."""
    out: dict[str, int] = {}
    for path in sorted((root / "chaos").rglob("*.py")):
        if "solutions" in path.relative_to(root).parts:
            continue
        rel = path.relative_to(root).as_posix()
        for name, n in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            out[f"{rel}::{name}"] = max(n, out.get(f"{rel}::{name}", 0))
    return out


def test_no_new_function_over_the_limit() -> None:
    over = {k: n for k, n in lengths().items() if n > LIMIT and k not in ALLOWED}
    assert over == {}, f"functions over {LIMIT} lines: split them into named steps"


def test_a_listed_function_does_not_grow() -> None:
    now = lengths()
    grew = {k: (limit, now[k]) for k, limit in ALLOWED.items() if now.get(k, 0) > limit}
    assert grew == {}, "(listed, now): a listed function may only get shorter"


def test_the_list_only_holds_todays_offenders() -> None:
    now = lengths()
    done = sorted(k for k in ALLOWED if now.get(k, 0) <= LIMIT)
    assert done == [], "gone or within the limit now: remove them from ALLOWED"


def test_a_long_function_is_measured(tmp_path: Path) -> None:
    pkg = tmp_path / "chaos" / "sub"
    pkg.mkdir(parents=True)
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    (pkg / "m.py").write_text(
        f"class C:\n    def long(self):\n{body}\n\n\ndef short():\n    pass\n"
    )
    (tmp_path / "chaos" / "solutions").mkdir()
    (tmp_path / "chaos" / "solutions" / "p.py").write_text(f"def student():\n{body}\n")
    assert lengths(tmp_path) == {"chaos/sub/m.py::C.long": LIMIT + 1, "chaos/sub/m.py::short": 2}
