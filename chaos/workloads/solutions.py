"""Finding and checking a lab's solution: a built-in name or a student's folder with protocol.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chaos.core.solution import REFERENCE
from chaos.node.solution import SolutionError, missing_functions

MOUNT = "/opt/solution"


def builtin(solutions_dir: Path) -> list[str]:
    """The built-in solutions' names (each a folder with protocol.py), the reference first."""
    names = sorted(
        d.name.replace("_", "-") for d in solutions_dir.iterdir() if (d / "protocol.py").exists()
    )
    return sorted(names, key=lambda n: n != REFERENCE)


def resolve(solutions_dir: Path, solution: str) -> Path:
    """A built-in solution's folder (``reference``, ``check-then-act``...) or a user's folder/file."""
    shipped = solutions_dir / solution.replace("-", "_")
    if "/" not in solution and shipped.is_dir():
        return shipped
    p = Path(solution).expanduser()
    if p.exists():
        return p.resolve()
    raise ValueError(
        f"solution {solution!r} is neither a built-in ({', '.join(builtin(solutions_dir))}) nor "
        "an existing path"
    )


def preflight(solutions_dir: Path, solution: str, required: Sequence[str], guide: str) -> None:
    """Raise ValueError naming every required function that is missing or still a TODO."""
    path = resolve(solutions_dir, solution)
    try:
        missing = missing_functions(path, list(required))
    except SolutionError as e:
        raise ValueError(str(e)) from e
    if missing:
        where = path / "protocol.py" if path.is_dir() else path
        raise ValueError(
            f"solution {solution!r} is not complete: {', '.join(missing)} in {where}; "
            f"see {guide} for what each function must do"
        )


def mounts(solutions_dir: Path, solution: str) -> dict[str, str]:
    """The bind mount that brings the solution into the nodes (no image rebuild on edits): its
    folder, or for a single file that file alone — never the folder around it."""
    path = resolve(solutions_dir, solution)
    return {str(path): MOUNT if path.is_dir() else f"{MOUNT}/{path.name}"}


def node_path(solutions_dir: Path, solution: str) -> str:
    """Where the services find the solution inside a node."""
    path = resolve(solutions_dir, solution)
    return MOUNT if path.is_dir() else f"{MOUNT}/{path.name}"
