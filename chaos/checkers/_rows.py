"""Lean op rows for the counting checkers, grouped by ``f``.

A row is ``(position, process, type, value, error)``: ``position`` orders rows across the whole
history, ``type`` is a plain string (``"invoke"``, ``"ok"``, ``"fail"``, ``"info"``). Rows are
kept per ``f`` (client ops) and per nemesis ``f`` apart, so that total-queue looks only at
enqueues, dequeues and drains, stats counts each ``f``'s list at C speed, and so on. The counting
checkers (total-queue, set-full, counter, unique-ids, stats, exceptions) work on
:class:`OpRows`, so a million-op history can be checked straight from its JSONL file without
building an :class:`~chaos.histories.ops.Op` per line; their ``(history: list[Op])`` entry points
convert with :func:`rows_of`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from chaos.histories.ops import NEMESIS, JSONValue, Op, OpType

# (position, process, type, value, error), from an Op
Row = tuple[int, int | str, str, JSONValue, str | None]

__all__ = ["NEMESIS", "OpRows", "Row", "completions", "ordered", "rows_of"]


@dataclass(slots=True)
class OpRows:
    by_f: dict[str, list[Row]] = field(default_factory=dict)
    nemesis: dict[str, list[Row]] = field(default_factory=dict)
    count: int = 0

    def get(self, f: str) -> list[Row]:
        return self.by_f.get(f, [])


# An op's type as a plain string. Looked up, not read as ``.value``: the enum's descriptor costs
# ~0.5 us a call (0.05-0.1 s of a 100k-op check), the lookup (str's own hash) ~30 ns.
_PLAIN = {t: t.value for t in OpType}


def rows_of(history: Iterable[Op]) -> OpRows:
    out = OpRows()
    plain = _PLAIN
    for pos, op in enumerate(history):
        table = out.nemesis if op.process == NEMESIS else out.by_f
        lst = table.get(op.f)
        if lst is None:
            lst = table[op.f] = []
        lst.append((pos, op.process, plain[op.type], op.value, op.error))
        out.count += 1
    return out


def ordered(rows: OpRows, fs: Iterable[str]) -> list[tuple[str, Row]]:
    """The client rows of the given ``f``s, in history order, each with its ``f``."""
    merged = [(f, r) for f in dict.fromkeys(fs) for r in rows.by_f.get(f, ())]
    merged.sort(key=lambda fr: fr[1][0])
    return merged


def completions(rows: list[tuple[str, Row]]) -> list[int]:
    """For each row, the index (in ``rows``) of its completion if it is an invoke, else -1.

    Pairs by process like Jepsen: a process has one op outstanding at a time, so pairing within
    a subset of ``f``s is the same as pairing in the whole history.
    """
    out = [-1] * len(rows)
    open_: dict[int | str, int] = {}
    for i, (_f, (_pos, p, t, _v, _e)) in enumerate(rows):
        if t == "invoke":
            open_[p] = i
        else:
            j = open_.pop(p, -1)
            if j >= 0:
                out[j] = i
    return out
