"""Load a stored run for reporting, whatever state it was left in.

``chaos.histories.store.load_run`` refuses a folder without a history; a report must not: a run
that died during set-up still has a spec worth showing. Every file is optional here, and what is
absent or unreadable is listed in ``missing`` / ``problems`` so the page can say so.

The run's layout, its JSON artefacts and the workload ``spec.json`` names all come from
``chaos.histories.store`` (the same reading ``chaos check`` does); only the line files are read
here, into the report's lighter rows. A page once lost its workload's sections because this module
read ``spec.json``'s old ``lab`` key itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from chaos.histories.ops import OP_FIELDS, Event, Op, event_fields, op_fields
from chaos.histories.reader import (
    EVENTS_FORMAT,
    HISTORY_FORMAT,
    LineFormat,
    LineProblem,
    dict_blocks,
    read_records,
)
from chaos.histories.store import RUN_FILES, read_artefact, workload_of

REPORT_NAME = "report.html"


class OpRow(NamedTuple):
    """An op as the report holds it: ``Op``'s fields in a tuple, for the same reason as
    :class:`EventRow`."""

    # Named as Op's field although it shadows tuple.index, which nothing here calls.
    index: int  # type: ignore[assignment]
    time: float
    process: int | str
    type: str
    f: str
    value: Any
    error: str | None
    extra: dict[str, Any]

    @staticmethod
    def from_json(d: dict[str, Any]) -> OpRow:
        # op_fields judges the line, so this reader and read_history accept the same lines
        index, time, process, t, f, value, error = op_fields(d)
        # most lines carry no field of their own: a set comparison in C spares the dict
        extra = {} if d.keys() <= OP_FIELDS else {k: v for k, v in d.items() if k not in OP_FIELDS}
        return OpRow(index, time, process, t, f, value, error, extra)

    @staticmethod
    def of(op: Op) -> OpRow:
        return OpRow(
            op.index, op.time, op.process, op.type.value, op.f, op.value, op.error, op.extra
        )


class EventLike(Protocol):
    """What the report reads of an event: :class:`~chaos.histories.ops.Event`'s fields."""

    @property
    def time(self) -> float: ...
    @property
    def node(self) -> str: ...
    @property
    def component(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def event_id(self) -> str | None: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def data(self) -> dict[str, Any]: ...


class EventRow(NamedTuple):
    """An event as the report holds it: the fields of ``Event`` in a tuple.

    A 100k-op lab3 run has some 250k events; a tuple is several times cheaper to build than the
    frozen dataclass, and the report reads every event but never needs more than its fields.
    """

    time: float
    node: str
    component: str
    kind: str
    task_id: str | None
    event_id: str | None
    pid: int | None
    data: dict[str, Any]

    @staticmethod
    def from_json(d: dict[str, Any]) -> EventRow:
        # event_fields judges the line, as for Event.from_json; its data is the parsed line's
        # own dict, which nobody else holds: no copy
        return EventRow(*event_fields(d))

    @staticmethod
    def of(ev: Event) -> EventRow:
        return EventRow(
            ev.time, ev.node, ev.component, ev.kind, ev.task_id, ev.event_id, ev.pid, ev.data
        )


def event_json(ev: EventLike) -> dict[str, Any]:
    d: dict[str, Any] = {
        "time": ev.time,
        "node": ev.node,
        "component": ev.component,
        "kind": ev.kind,
    }
    for k in ("task_id", "event_id", "pid"):
        if getattr(ev, k) is not None:
            d[k] = getattr(ev, k)
    if ev.data:
        d["data"] = ev.data
    return d


class NotARunDir(Exception):
    """The folder holds none of the files a stored run is made of."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunData:
    path: Path
    spec: dict[str, Any]
    history: list[OpRow]
    events: list[EventRow]
    final: dict[str, Any]
    results: dict[str, Any]
    lab_report: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # where the page says the run is kept, if not where it was read from: a grade's worker draws
    # the page in its temporary copy of the run, which the grade keeps elsewhere
    kept_at: Path | None = None

    @property
    def home(self) -> Path:
        """The folder a reader re-checks or re-renders the run from."""
        return self.kept_at or self.path

    @property
    def lab(self) -> str:
        return workload_of(self.spec)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def end_time(self) -> float:
        """The last instant anything was recorded; open intervals are drawn up to here."""
        t = 0.0
        if self.history:
            t = max(t, max(op.time for op in self.history))
        if self.events:
            t = max(t, self.events[-1].time)
        return t


_HISTORY: LineFormat[OpRow] = LineFormat(
    HISTORY_FORMAT, OpRow.from_json, dict_blocks(OpRow.from_json)
)
_EVENTS: LineFormat[EventRow] = LineFormat(
    EVENTS_FORMAT, EventRow.from_json, dict_blocks(EventRow.from_json)
)


def _read_history(path: Path, problems: list[str], run_dir: Path) -> list[OpRow]:
    h = read_records(path, _HISTORY)
    problems.extend(_short(x, run_dir) for x in h.problems)
    return h.records


def _read_events(path: Path, problems: list[str], run_dir: Path) -> list[EventRow]:
    e = read_records(path, _EVENTS)
    problems.extend(_short(x, run_dir) for x in e.problems)
    records = e.records
    records.sort(key=itemgetter(0))
    return records


def _short(problem: LineProblem, run_dir: Path) -> str:
    return str(problem).replace(f"{run_dir}/", "")


def load(run_dir: Path) -> RunData:
    run_dir = run_dir.resolve()
    if not run_dir.is_dir() or not any((run_dir / f).exists() for f in RUN_FILES):
        raise NotARunDir(f"{run_dir} is not a stored run (none of {', '.join(RUN_FILES)})")
    missing: list[str] = []
    problems: list[str] = []

    def obj(name: str) -> dict[str, Any]:
        # a regular file, not followed through a link, read up to the input bound: a FIFO named
        # final.json hung `chaos report` and a `serve` thread; a deep value overflowed the stack
        got = read_artefact(run_dir / name, problems)
        if got is None:
            if not (run_dir / name).exists():
                missing.append(name)
            return {}
        return dict(got)

    spec = obj("spec.json")
    history: list[OpRow] = []
    events: list[EventRow] = []
    for name in ("history.jsonl", "events.jsonl"):
        p = run_dir / name
        if not p.exists():
            missing.append(name)
            continue
        if p.is_symlink() or not p.is_file():
            problems.append(f"{name}: not a regular file")
            continue
        try:
            if name == "history.jsonl":
                history = _read_history(p, problems, run_dir)
            else:
                events = _read_events(p, problems, run_dir)
        except OSError as e:
            problems.append(f"{name}: unreadable ({e})")
    final = obj("final.json")
    results = obj("results.json")
    lab_report = obj("lab-report.json")
    return RunData(
        path=run_dir,
        spec=spec,
        history=history,
        events=events,
        final=final,
        results=results,
        lab_report=lab_report,
        missing=missing,
        problems=problems,
    )
