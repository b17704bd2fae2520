"""Loading a student's ``protocol.py`` and checking it before a run.

The check is static (an AST walk) so that it runs on the orchestrator host without etcd: a
function whose body only raises ``NotImplementedError`` is a TODO the student has not done yet.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import stat
import sys
from pathlib import Path
from types import ModuleType

MAX_SOURCE = 1 << 20


class SolutionError(Exception):
    pass


def protocol_file(path: Path) -> Path:
    p = path / "protocol.py" if path.is_dir() else path
    if not p.exists():
        raise SolutionError(f"{p} does not exist: a solution is a folder with a protocol.py")
    return p


def _read_source(file: Path) -> bytes:
    """The source, if it is a regular file of at most MAX_SOURCE bytes: a FIFO would hang the
    read (this runs on the host, before anything starts), a device would never end. The same
    rules as chaos.histories.files.read_input, which this layer cannot import."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise SolutionError(f"{file}: cannot read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SolutionError(f"{file}: not a regular file; refused unread")
        if st.st_size > MAX_SOURCE:
            raise SolutionError(f"{file}: over {MAX_SOURCE >> 10} KB; a protocol is a page or two")
        return fh.read(MAX_SOURCE)


def missing_functions(path: Path, required: list[str]) -> list[str]:
    """Names in ``required`` that the file does not define, or defines as a bare TODO."""
    file = protocol_file(path)
    source = _read_source(file)
    try:
        tree = ast.parse(source.decode(errors="replace"), filename=str(file))
    except SyntaxError as e:
        raise SolutionError(f"{file}:{e.lineno}: syntax error: {e.msg}") from e
    except (RecursionError, MemoryError, ValueError) as e:  # nesting too deep, NUL bytes
        raise SolutionError(f"{file}: cannot be parsed ({type(e).__name__})") from None
    defined: dict[str, ast.FunctionDef] = {}
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defined[node.name] = node
        elif isinstance(node, ast.ImportFrom | ast.Import):
            imported.update(a.asname or a.name for a in node.names)
    out = []
    for name in required:
        fn = defined.get(name)
        if fn is None:
            if name not in imported:
                out.append(f"{name} (not defined)")
            continue
        body = [
            s
            for s in fn.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if len(body) == 1 and isinstance(body[0], ast.Raise):
            exc = body[0].exc
            target = exc.func if isinstance(exc, ast.Call) else exc
            if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                out.append(f"{name} (still a TODO: it raises NotImplementedError)")
    return out


def load(path: Path) -> ModuleType:
    p = protocol_file(path)
    spec = importlib.util.spec_from_file_location("chaos_solution_protocol", p)
    if spec is None or spec.loader is None:
        raise SolutionError(f"cannot load {p}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
