"""The records a run is made of: client/nemesis operations and system events.

An operation is Jepsen-shaped: every logical op appears twice in a history, an ``invoke`` and a
completion that is ``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (unknown:
a timeout, a crash, a partition). Checkers must treat ``info`` as "maybe".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeAlias

import msgspec


class OpType(StrEnum):
    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


NEMESIS = "nemesis"
# the ``extra`` key of a nemesis op that says an aimed fault never found its aim (the run is
# unknown: chaos.checkers.completeness)
ABSTAINED = "abstained"

OP_FIELDS = frozenset({"index", "time", "process", "type", "f", "value", "error"})
OP_TYPES = frozenset(t.value for t in OpType)

# A decoded JSON value (an op's value, a field of a final state or a journal): a true boundary, its
# shape is known only once a reader checks it, so it stays Any; the alias names where a value is JSON.
JSONValue: TypeAlias = Any

OpFields = tuple[int, float, int | str, str, str, Any, Any]
EventFields = tuple[float, str, str, str, Any, Any, Any, dict[str, Any]]


def op_fields(d: dict[str, Any]) -> OpFields:
    """The checked fields of one history line: ``(index, time, process, type, f, value, error)``.

    The one place a history line is judged, whatever record a reader builds from it. Raises
    ``KeyError`` for a missing field (index, time, process, type, f are required, in that order),
    ``ValueError`` or ``TypeError`` for an invalid one: a process that is not an int or a string
    (Jepsen's process is a number or ``:nemesis``), a type other than invoke/ok/fail/info.
    """
    index = int(d["index"])
    time = float(d["time"])
    process = d["process"]
    t = d["type"]
    f = d["f"]
    if type(t) is not str or t not in OP_TYPES:
        raise ValueError(f"{t!r} is not a valid OpType")
    if type(process) is not int and type(process) is not str:
        raise ValueError(f"process {process!r} is not an int or a string")
    return index, time, process, t, f if type(f) is str else str(f), d.get("value"), d.get("error")


def _ident(d: dict[str, Any], key: str) -> str | None:
    """A task or event id: a string (a number is taken as its text) or absent. Anything else is
    refused: ids become dict keys and set members in the checkers and the report, and a list
    there crashed them."""
    v = d.get(key)
    if v is None or type(v) is str:
        return v
    if type(v) is int:
        return str(v)
    raise ValueError(f"{key} {str(v)[:40]!r} is not a string")


def _pid(d: dict[str, Any]) -> int | None:
    v = d.get("pid")
    if v is None or type(v) is int:
        return v
    raise ValueError(f"pid {str(v)[:40]!r} is not an integer")


def event_fields(d: dict[str, Any]) -> EventFields:
    """The checked fields of one events line, in :class:`Event`'s order (``data`` is the line's
    own object, not a copy). Raises like :func:`op_fields`."""
    data = d.get("data") or {}
    return (
        float(d["time"]),
        str(d["node"]),
        str(d["component"]),
        str(d["kind"]),
        _ident(d, "task_id"),
        _ident(d, "event_id"),
        _pid(d),
        data if type(data) is dict else dict(data),
    )


class Op(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One line of a history.

    ``time`` is seconds since the start of the run (monotonic clock); ``process`` is a client's
    logical process number, or ``"nemesis"``. ``value`` is any JSON value. ``extra`` keeps fields a
    producer added (node, target, pid, error detail) without the record having to know them.

    A msgspec Struct, not a dataclass: readers decode a million of these straight from JSON, and
    msgspec builds Structs ~2.5x faster than dataclasses (bench/bench_checkers.py edn). Frozen:
    change one with ``msgspec.structs.replace``. ``gc=False``: an op holds only decoded values,
    never anything that points back at it, so the collector need not track it.
    """

    index: int
    time: float
    process: int | str
    type: OpType
    f: str
    value: Any = None
    error: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def is_nemesis(self) -> bool:
        return self.process == NEMESIS

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "time": round(self.time, 6),
            "process": self.process,
            "type": self.type.value,
            "f": self.f,
            "value": self.value,
        }
        if self.error is not None:
            d["error"] = self.error
        if self.extra:
            d.update(self.extra)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Op:
        index, time, process, t, f, value, error = op_fields(d)
        return Op(
            index=index,
            time=time,
            process=process,
            type=OpType(t),
            f=f,
            value=value,
            error=error,
            extra={k: v for k, v in d.items() if k not in OP_FIELDS},
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something the system under test reported about itself (publish, delivery, commit, ...).

    ``time`` is seconds since the start of the run, on the same clock as ops: services stamp
    ``CLOCK_MONOTONIC``, which containers on one host share, and the orchestrator subtracts the
    run's origin. ``data`` holds the kind-specific fields (amount, token, seq, ...).
    """

    time: float
    node: str
    component: str
    kind: str
    task_id: str | None = None
    event_id: str | None = None
    pid: int | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "time": round(self.time, 6),
            "node": self.node,
            "component": self.component,
            "kind": self.kind,
        }
        if self.task_id is not None:
            d["task_id"] = self.task_id
        if self.event_id is not None:
            d["event_id"] = self.event_id
        if self.pid is not None:
            d["pid"] = self.pid
        if self.data:
            d["data"] = self.data
        return d

    @staticmethod
    def from_raw(raw: dict[str, Any], origin: float) -> Event:
        """An event as a service wrote it (``mono`` = CLOCK_MONOTONIC), placed on the run's clock."""
        return Event(
            time=float(raw["mono"]) - origin,
            node=str(raw["node"]),
            component=str(raw["component"]),
            kind=str(raw["kind"]),
            task_id=_ident(raw, "task_id"),
            event_id=_ident(raw, "event_id"),
            pid=_pid(raw),
            data=dict(raw.get("data") or {}),
        )

    @staticmethod
    def from_json(d: dict[str, Any]) -> Event:
        time, node, component, kind, task_id, event_id, pid, data = event_fields(d)
        return Event(
            time=time,
            node=node,
            component=component,
            kind=kind,
            task_id=task_id,
            event_id=event_id,
            pid=pid,
            data=dict(data),  # the caller's dict stays the caller's
        )


def pair_index(history: list[Op]) -> dict[int, int]:
    """Map each invoke's index to its completion's index (Jepsen's pairing by process).

    A process has at most one outstanding op; an invoke with no completion (the run ended, or the
    process crashed and never reported) is left out, which callers read as ``info``.
    """
    open_by_process: dict[int | str, int] = {}
    pairs: dict[int, int] = {}
    for pos, op in enumerate(history):
        if op.type is OpType.INVOKE:
            open_by_process[op.process] = pos
        else:
            inv = open_by_process.pop(op.process, None)
            if inv is not None:
                pairs[inv] = pos
    return pairs


def orphan_completions(history: Sequence[Op]) -> list[int]:
    """Positions of client completions that no open invoke of their process precedes.

    Such a completion says an op ran whose invocation the history does not hold: the history
    lost ops (a line cut out, a merge gone wrong) or is not one process's sequence. Checkers
    pairing by process (Jepsen's rule) would drop it silently; callers report it instead. The
    nemesis is left out (its ops are not client ops).
    """
    open_processes: set[Any] = set()
    orphans: list[int] = []
    invoke = OpType.INVOKE
    for pos, op in enumerate(history):
        p = op.process
        if p.__class__ is str and p == NEMESIS:
            continue
        if op.type is invoke:
            open_processes.add(p)
        elif p in open_processes:
            open_processes.discard(p)
        else:
            orphans.append(pos)
    return orphans


class OpLike(Protocol):
    """What the checkers and the report read of an op (an :class:`Op`, or a lighter row): its
    fields; ``type`` is compared as text, which ``OpType`` (a StrEnum) and a plain string both
    satisfy."""

    @property
    def index(self) -> int: ...
    @property
    def time(self) -> float: ...
    @property
    def process(self) -> int | str: ...
    @property
    def type(self) -> str: ...
    @property
    def f(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def error(self) -> str | None: ...
    @property
    def extra(self) -> dict[str, Any]: ...
