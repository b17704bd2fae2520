"""A transactional history as transactions: invocations paired with completions.

Jepsen's ``:txn`` ops (and chaos's ``f: "txn"`` ops) carry a list of micro-operations
``[f, key, value]``: ``[:append 5 3]`` appends 3 to the list at key 5, ``[:w 5 3]`` writes 3,
``[:r 5 nil]`` reads (the ``:ok`` completion carries what was read). An invocation and its
completion are paired by process, in history order; ``:ok`` happened, ``:fail`` did not, ``:info``
(or an invocation never completed) may or may not have happened and its reads are unknown.

A :class:`Txn` keeps its positions in the history: ``invoke_pos`` and ``complete_pos`` order
transactions in real time (the history is written in the order things were seen), and
``index`` names the transaction by its completion's ``:index`` (Elle's convention).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from chaos.histories.ops import JSONValue

__all__ = ["APPEND", "READ", "WRITE", "Mop", "RawOp", "Txn", "TxnInputError", "transactions"]

APPEND = "append"
READ = "r"
WRITE = "w"
_MOP_NAMES = {"append": APPEND, "r": READ, "read": READ, "w": WRITE, "write": WRITE}

Mop = tuple[str, Any, Any]
_INT_ONLY = frozenset({int})  # (f, key, value), f one of APPEND / READ / WRITE


class TxnInputError(ValueError):
    """A history that cannot be read as transactions: names the op (and line when known)."""


class RawOp(msgspec.Struct, frozen=True, gc=False):
    """One op as the readers give it, before pairing. ``process`` and ``f`` may be absent
    (Elle's own test histories often hold completions only); ``line`` is the source line when
    the reader knows it. A msgspec Struct, as :class:`~chaos.histories.ops.Op` is: a
    100k-transaction history makes 200k of these, and a frozen dataclass builds them ~3x
    slower."""

    pos: int
    index: int
    process: JSONValue  # as decoded: a number, "nemesis", or None when absent
    type: str
    f: str | None
    value: JSONValue
    line: int | None = None

    def where(self) -> str:
        return f"op {self.index}" + (f" (line {self.line})" if self.line is not None else "")


class Txn(msgspec.Struct, frozen=True, gc=False):
    """One transaction. ``id`` is its position in the list :func:`transactions` returns."""

    id: int
    index: int
    invoke_index: int | None
    process: JSONValue  # as decoded: a number, "nemesis", or None when absent
    type: str
    mops: tuple[Mop, ...]
    invoke_pos: int | None
    complete_pos: int | None

    def describe(self) -> str:
        """``op 12 (process 3)``: where to find it in the history file."""
        who = f", process {self.process}" if self.process is not None else ""
        inv = (
            f", invoked at op {self.invoke_index}"
            if self.invoke_index is not None and self.invoke_index != self.index
            else ""
        )
        return f"op {self.index} ({self.type}{who}{inv})"


class _Where:
    """Where a micro-op is, put into words only when there is an error to report."""

    __slots__ = ("i", "op")

    def __init__(self, op: RawOp, i: int) -> None:
        self.op, self.i = op, i

    def __str__(self) -> str:
        return f"{self.op.where()}, micro-op {self.i}"


def _freeze(v: JSONValue, where: object) -> object:  # hashable: a list as a tuple
    """Keys and written values become dict keys: lists become tuples, maps are refused."""
    t = type(v)
    if t is int or v is None:
        return v
    if t is list and set(map(type, v)) <= _INT_ONLY:
        return tuple(v)  # the common case: a read of a list of integers
    if isinstance(v, list | tuple):
        return tuple(_freeze(x, where) for x in v)
    if isinstance(v, dict | set | frozenset):
        raise TxnInputError(f"{where}: a key or written value must not be a map or a set")
    if isinstance(v, str):
        return str.__str__(v)  # a Keyword key reads as its name
    return v


def _mops(value: JSONValue, op: RawOp, completed: bool) -> tuple[Mop, ...]:
    if not isinstance(value, list | tuple):
        raise TxnInputError(f"{op.where()}: a txn's value must be a list of [f key value]")
    out: list[Mop] = []
    names = _MOP_NAMES
    for i, m in enumerate(value):
        if not isinstance(m, list | tuple) or len(m) != 3:
            raise TxnInputError(f"{_Where(op, i)}: not a [f key value] triple: {str(m)[:60]}")
        f, k, v = m
        name = names.get(f) if isinstance(f, str) else None
        if name is None:
            raise TxnInputError(
                f"{_Where(op, i)}: unknown micro-op {str(f)[:30]!r} (append, r or w)"
            )
        where = _Where(op, i)
        key = k if type(k) is int else _freeze(k, where)
        # A read of a list (list-append) becomes a tuple of its elements, like a written list
        # (rw-register) does: both compare and hash alike.
        if not completed and name == READ:
            v = None
        elif type(v) is not int:
            v = _freeze(v, where)
        out.append((name, key, v))
    return tuple(out)


def _is_txn(op: RawOp) -> bool:
    return op.f is None or op.f == "txn"


def transactions(ops: Iterable[RawOp]) -> tuple[list[Txn], dict[str, int]]:
    """Pair invocations with completions and return the transactions, in completion order
    (an invocation never completed comes at the end), with counts of what was left out.

    Ops whose ``f`` is not ``txn`` (nemesis ops, other clients) are skipped and counted.
    Raises :class:`TxnInputError` for a txn op whose value is not a list of micro-ops.
    """
    skipped: dict[str, int] = {}
    open_: dict[Any, list[RawOp]] = {}  # a process's invocations not completed yet
    out: list[tuple[int, RawOp | None, RawOp]] = []
    for op in ops:
        if op.process in ("nemesis",) or not _is_txn(op):
            key = f"f={op.f}" if op.process != "nemesis" else "nemesis"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        if op.type == "invoke":
            if op.process is None:
                continue  # without a process an invocation cannot be paired: only its order
            open_.setdefault(op.process, []).append(op)
            continue
        inv = _invocation(open_.get(op.process), op) if op.process is not None else None
        out.append((op.pos, inv, op))
    for invs in open_.values():  # never completed
        out.extend((inv.pos, inv, inv) for inv in invs)
    out.sort(key=lambda t: t[0])
    txns: list[Txn] = []
    for _, inv, comp in out:
        typ = comp.type if comp is not inv else "info"
        if typ == "ok":
            mops = _mops(comp.value, comp, True)
        elif isinstance(comp.value, list | tuple) and comp is not inv:
            mops = _mops(comp.value, comp, typ == "ok")
        elif inv is not None:
            mops = _mops(inv.value, inv, False)
        else:
            mops = _mops(comp.value, comp, False)
        if inv is not None and comp is not inv and inv.value is not None:
            _check_shape(inv, comp, mops)
        txns.append(
            Txn(
                id=len(txns),
                index=comp.index,
                invoke_index=inv.index if inv is not None else None,
                process=comp.process,
                type=typ,
                mops=mops,
                invoke_pos=inv.pos if inv is not None else None,
                complete_pos=comp.pos if typ != "info" else None,
            )
        )
    return txns, skipped


def _invocation(invs: list[RawOp] | None, comp: RawOp) -> RawOp | None:
    """The open invocation ``comp`` completes, taken off ``invs``. A process runs one
    transaction at a time, but a history may hold an invocation whose completion was lost (it
    stays open, never completed) or, from an odd client, several open at once: then the one
    whose micro-ops the completion reports, refused where none or more than one does."""
    if not invs:
        return None
    if len(invs) == 1:
        return invs.pop()
    mops = None
    if isinstance(comp.value, list | tuple):
        mops = _mops(comp.value, comp, comp.type == "ok")
    fits = [i for i in invs if mops is not None and _same_shape(i, mops)]
    if len(fits) != 1:
        ops = ", ".join(str(i.index) for i in invs)
        which = "none" if not fits else f"{len(fits)}"
        raise TxnInputError(
            f"{comp.where()}: process {comp.process} has {len(invs)} invocations open (ops "
            f"{ops}) and the completion's micro-ops match {which} of them: a process runs one "
            "transaction at a time, so which one completed cannot be told"
        )
    invs.remove(fits[0])
    return fits[0]


def _same_shape(inv: RawOp, mops: Sequence[Mop]) -> bool:
    """Whether ``mops`` report ``inv``'s micro-ops, written values included (a completion
    echoes what it wrote or appended)."""
    try:
        _check_shape(inv, inv, mops)
        return all(
            m[0] == READ or _freeze(a[2], inv.where()) == m[2]
            for a, m in zip(inv.value, mops, strict=True)
        )
    except (TxnInputError, IndexError, TypeError):
        return False


def _check_shape(inv: RawOp, comp: RawOp, mops: Sequence[Mop]) -> None:
    """A completion reports the invoked micro-ops: same count, same f and key, in order."""
    asked = inv.value
    if not isinstance(asked, list | tuple):
        raise TxnInputError(f"{inv.where()}: a txn's value must be a list of [f key value]")
    names = _MOP_NAMES
    try:
        same = len(asked) == len(mops) and [(names.get(a[0]), a[1]) for a in asked] == [
            m[:2] for m in mops
        ]
    except (IndexError, KeyError, TypeError):  # a malformed invoked micro-op
        same = False
    if not same and len(asked) == len(mops):
        # keys compare after the completion's freezing (a vector key is a tuple there)
        try:
            same = all(
                names.get(a[0]) == m[0] and _freeze(a[1], inv.where()) == m[1]
                for a, m in zip(asked, mops, strict=True)
            )
        except (IndexError, KeyError, TypeError, TxnInputError):
            same = False
    if not same:
        raise TxnInputError(
            f"{comp.where()}: the completion's micro-ops do not match its invocation {inv.where()}"
        )
