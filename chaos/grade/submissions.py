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
import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# what a run copies of a solution (no more): a submission over it could never run
from chaos.core.solution import MOUNT_CAP, MOUNT_FILES
from chaos.histories.files import read_input
from chaos.histories.limits import InputError
from chaos.node.solution import MAX_SOURCE

LINKED = "a symbolic link; links under the submissions folder are not followed"


def apparent_size(root: Path) -> tuple[int, int]:
    """(apparent bytes, entries) under ``root`` from ``lstat`` alone: nothing is read or followed
    (a sparse file counts at its full size, a FIFO does not block)."""
    total, count = 0, 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
        for name in dirs + files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
                count += 1
    return total, count


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
    if proto.is_symlink():
        return "protocol.py is a symbolic link (links in a submission are not followed)"
    if not proto.is_file():
        return "no protocol.py"
    size = proto.stat().st_size
    if size > MAX_SOURCE:
        return f"protocol.py is {size >> 10} KB (over {MAX_SOURCE >> 10} KB)"
    total, count = apparent_size(folder)
    if total > MOUNT_CAP or count > MOUNT_FILES:
        return (
            f"the folder holds {total} bytes in {count} entries, more than a submission may "
            f"({MOUNT_CAP >> 20} MiB, {MOUNT_FILES} entries)"
        )
    try:
        source = read_input(proto, MAX_SOURCE)
    except InputError as e:
        return f"protocol.py: {e.args[0].rsplit(': ', 1)[-1]}"
    try:
        ast.parse(source, filename=str(proto))
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
        if p.name.startswith((".", "_")):
            continue
        if p.is_symlink():
            # a link could lead anywhere on the grader (another student's folder, the host's
            # files): a row with the reason, never followed
            if p.is_dir():
                out.append(Submission(name=p.name, solution=str(p), problem=LINKED))
            continue
        if p.is_dir():
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
