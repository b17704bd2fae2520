"""History files as raw ops for the transactional checker: Jepsen EDN and chaos JSONL alike.

EDN goes through the general reader (:mod:`chaos.histories.edn`): one vector (or list) of op
maps, or op maps one after another, over any lines. Unlike the linearizability checkers, ops
need not carry ``:process``, ``:time``, ``:f`` or ``:index`` (Elle's own histories often hold
only completions). Any form that cannot be read is an error naming its line — a transactional
verdict over a history that silently lost ops could be wrong either way. JSONL goes through the
one JSONL reader; its unreadable lines come back as problems, as for every other model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.checkers.elle.txns import RawOp, TxnInputError
from chaos.histories import edn
from chaos.histories.edn_types import EdnError, Tagged
from chaos.histories.jsonl import LineProblem, read_history
from chaos.histories.ops import JSONValue, Op

__all__ = ["NoHistory", "raw_ops", "read_commit_order", "read_raw_ops"]

_TYPES = frozenset({"invoke", "ok", "fail", "info"})


class NoHistory(Exception):
    """No file to read at the path (or none in the run folder)."""


def _resolve(path: Path) -> Path:
    if path.is_dir():
        for name in ("history.jsonl", "history.edn"):
            if (path / name).is_file():
                return path / name
        raise NoHistory(f"{path} holds no history.jsonl or history.edn")
    if not path.exists():
        raise NoHistory(f"{path} does not exist")
    return path


def _is_jsonl(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return True
    if suffix == ".edn":
        return False
    with open(path, "rb") as fh:
        head = fh.read(64 * 1024).decode("utf-8", errors="replace")
    for line in head.splitlines():
        if line.strip():
            try:
                return isinstance(json.loads(line), dict)
            except ValueError:
                return False
    return False


def raw_ops(ops: list[Op]) -> list[RawOp]:
    """chaos's ops as raw ops (positions are list positions)."""
    return [
        RawOp(
            pos=i,
            index=op.index,
            process=op.process,
            type=str(op.type),
            f=op.f,
            value=op.value,
        )
        for i, op in enumerate(ops)
    ]


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _op(m: JSONValue, pos: int, line: int | None) -> RawOp:
    where = f"line {line}" if line is not None else f"op {pos}"
    if isinstance(m, Tagged) and isinstance(m.value, dict):
        m = m.value  # #jepsen.history.Op{...}
    if not isinstance(m, dict):
        raise TxnInputError(f"{where}: not an op map")
    t = m.get("type")
    if not isinstance(t, str) or t not in _TYPES:
        raise TxnInputError(f"{where}: :type must be :invoke, :ok, :fail or :info")
    index = m.get("index", pos)
    if not isinstance(index, int) or isinstance(index, bool):
        raise TxnInputError(f"{where}: :index must be an integer")
    process = m.get("process")
    if isinstance(process, str):
        process = str.__str__(process)
    elif process is not None and (not isinstance(process, int) or isinstance(process, bool)):
        raise TxnInputError(f"{where}: :process must be an integer or a keyword")
    f = m.get("f")
    return RawOp(
        pos=pos,
        index=index,
        process=process,
        type=str.__str__(t),
        f=None if f is None else str.__str__(f) if isinstance(f, str) else str(f),
        value=m.get("value"),
        line=line,
    )


def _read_edn(path: Path) -> list[RawOp]:
    text = path.read_bytes().decode("utf-8", errors="strict")
    forms: list[tuple[Any, int]] = []
    pos = 0
    line, line_pos = 1, 0  # lines counted as the reader goes: once over the text
    while True:
        try:
            form, end = edn.read_form(text, pos)
        except EOFError:
            break
        except EdnError as e:
            start = pos
            while start < len(text) and text[start] in " \t\r\n,":
                start += 1
            at, stop = _line(text, start), _line(text, e.pos)
            where = f" (at line {stop})" if stop != at else ""
            raise TxnInputError(f"{path}: line {at}: not EDN: {e}{where}") from None
        start = pos
        while start < end and text[start] in " \t\r\n,":
            start += 1
        line += text.count("\n", line_pos, start)
        line_pos = start
        forms.append((form, line))
        pos = end
    if len(forms) == 1 and isinstance(forms[0][0], list):
        items: list[tuple[Any, int | None]] = [(m, None) for m in forms[0][0]]
    else:
        items = list(forms)
    return [_op(m, i, line) for i, (m, line) in enumerate(items)]


def read_raw_ops(path: Path) -> tuple[list[RawOp], list[LineProblem], Path]:
    """The raw ops of a history file (or of a run folder's history), the JSONL lines that could
    not be read, and the file read. Raises :class:`NoHistory` or :class:`TxnInputError`."""
    path = _resolve(Path(path))
    try:
        if _is_jsonl(path):
            loaded = read_history(path)
            return raw_ops(loaded.records), loaded.problems, path
        ops, problems = edn.read_history(path)  # the fast path, when every op is complete
        if not problems:
            return raw_ops(ops), [], path
        return _read_edn(path), [], path
    except UnicodeDecodeError as e:
        raise TxnInputError(f"{path}: bytes that are not UTF-8 at offset {e.start}") from None
    except OSError as e:
        raise NoHistory(f"cannot read {path}: {e.strerror or e}") from None


def read_commit_order(path: Path) -> dict[int, int]:
    """``--version-order FILE``: the database's commit order, a JSON object or EDN map from
    each transaction's completion ``:index`` to its position (Elle's ``:transaction-order``).
    Raises :class:`NoHistory` when it cannot be read, :class:`TxnInputError` when it is not such
    a map or two transactions share a position (a commit order is total)."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as e:
        raise NoHistory(f"--version-order: cannot read {path}: {e}") from None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = edn.loads(text)
        except EdnError as e:
            raise TxnInputError(f"--version-order: {path} is neither JSON nor EDN: {e}") from None
    if not isinstance(data, dict):
        raise TxnInputError(f"--version-order: {path} must hold one map of :index to position")
    order: dict[int, int] = {}
    for k, v in data.items():
        try:
            i, at = int(k), v
        except (TypeError, ValueError):
            i, at = None, None
        if i is None or type(at) is not int:
            raise TxnInputError(
                f"--version-order: {path}: {str(k)[:30]} -> {str(v)[:30]}: each entry maps an "
                "op's :index to an integer position"
            )
        order[i] = at
    if len(set(order.values())) != len(order):
        raise TxnInputError(
            f"--version-order: {path}: two transactions share a position; a commit order "
            "gives each its own"
        )
    return order
