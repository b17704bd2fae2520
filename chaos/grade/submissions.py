"""The class: one folder per student under the submissions folder, each with its protocol.py.

    submissions/
      alice/protocol.py
      bob/protocol.py        (and any helper files beside it)
      carol/                 no protocol.py: a row with the reason, never run

A submission that cannot be run is a row with the reason, never a crash of the grading. What can
be seen without running the student's code is checked here (a missing or oversized protocol.py, a
syntax error); a crash or hang on import shows only in its runs, which then fail with the reason.
The student's code is never imported by the grader: it runs only inside the nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# as chaos.node.solution.MAX_SOURCE: a protocol is a page or two
MAX_SOURCE = 1 << 20


@dataclass(frozen=True, slots=True)
class Submission:
    """A row of the class table. ``solution`` is what ``chaos run --solution`` takes: the
    student's folder, or a built-in solution's name for a control row. ``problem`` is why the
    submission cannot be run at all (None: it can)."""

    name: str
    solution: str
    kind: str = "student"  # "student" | "reference" | "buggy" (the last two are control rows)
    problem: str | None = None

    @property
    def is_control(self) -> bool:
        return self.kind != "student"


def _problem(folder: Path) -> str | None:
    proto = folder / "protocol.py"
    if not proto.is_file():
        return "no protocol.py"
    size = proto.stat().st_size
    if size > MAX_SOURCE:
        return f"protocol.py is {size >> 10} KB (over {MAX_SOURCE >> 10} KB)"
    try:
        ast.parse(proto.read_bytes(), filename=str(proto))
    except SyntaxError as e:
        return f"protocol.py:{e.lineno}: syntax error: {e.msg}"
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, nesting too deep
        return f"protocol.py cannot be parsed ({type(e).__name__})"
    return None


def discover(root: Path) -> list[Submission]:
    """Every student folder under ``root``, sorted by name; hidden folders and loose files are not
    students."""
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder of submissions (one folder per student)")
    out = []
    for p in sorted(root.iterdir(), key=lambda p: p.name):
        if p.name.startswith((".", "_")) or not p.is_dir():
            continue
        out.append(Submission(name=p.name, solution=str(p.resolve()), problem=_problem(p)))
    return out


CONTROL_PREFIX = "control:"


def controls(grade_controls: Mapping[str, str]) -> list[Submission]:
    """The workload's shipped solutions as control rows: the reference (its failures are false
    alarms) and each buggy one (its passes are misses)."""
    return [
        Submission(name=CONTROL_PREFIX + name, solution=name, kind=kind)
        for name, kind in grade_controls.items()
    ]
