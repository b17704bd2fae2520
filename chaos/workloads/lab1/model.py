"""lab1's model of one run, built once and read by every checker (chaos.workloads.lab1.checkers).

A run is its history (the nemesis's ops), the services' events and the final state read from etcd
(chaos.workloads.lab1.final_state). From them, each once:

- ``faults``        the fault intervals of the history (chaos.checkers.faults), which the stops
                    and the clock shifts are read from;
- ``stops``         the processes (or nodes) the nemesis stopped and resumed;
- ``grants``        each lock grant and what the job did under it, by the services' events;
- ``lock``          the grants as the lock record's own versions show them, in etcd's order of
                    writes (None for runs stored before the record's history was read);
- ``applications``  every change the store applied (the final state), joined with its report;
- ``shifts``        the clock faults of the run;
- ``journal``       the nodes' etcd-proxy journals: who wrote each revision.

Each part is computed on first use and kept, so a check computes each once, and a part that cannot
be built from a malformed run fails only the checkers that read it (``check_safe`` makes those
``unknown``). The model's parts are immutable (tuples of frozen records): checkers only read them.

The final state is the authority on what was applied: a write whose outcome the service never
learnt (an etcd timeout) is still in it. Events give the times. Times are seconds since the run's
origin, the clock of the history and the events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from chaos.checkers.faults import FaultInterval, fault_intervals
from chaos.checkers.journal import Journal, read_journal
from chaos.histories.ops import Event, Op

APPLIED = "applied"
STALE = "rejected-stale"
# the events of one grant: what its holder did under its token
GRANT_KINDS = frozenset(
    ("lock-acquired", "job-start", "write", "job-end", "lock-released", "renewal-failed",
     "lock-renewed")
)  # fmt: skip


def rnd(x: float | None) -> float | None:
    """A time as records show it (ms)."""
    return None if x is None else round(x, 3)


def at(x: float | None) -> str:
    """A time as sentences tell it."""
    return f"{x:.2f} s" if x is not None else "an unknown time"


def as_int(x: Any) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def as_float(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


# ---------------------------------------------------------------- the run's records


@dataclass(frozen=True, slots=True, kw_only=True)
class Stop:
    """A process (or, for ``freeze``, a whole node) that the nemesis stopped and resumed."""

    fault_id: Any
    fault: str
    node: str
    pid: int | None
    start: float
    end: float | None  # None: never resumed (the instant it resumed: resumed_at, see faults)
    trigger: str | None = None  # the hold point that fired it (``acquire-commit``, ...)

    def hits(self, node: str, pid: int | None) -> bool:
        return node == self.node and (self.pid is None or pid is None or pid == self.pid)

    def span(self) -> str:
        end = f"{self.end:.2f} s" if self.end is not None else "the end of the run"
        return f"{self.start:.2f} s to {end}"

    def to_json(self) -> dict[str, Any]:
        return {"fault_id": self.fault_id, "fault": self.fault, "node": self.node, "pid": self.pid,
                "start": rnd(self.start), "end": rnd(self.end)}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """One lock grant and what the job did under it (events of one process with one token)."""

    node: str
    pid: int | None
    token: int
    night: int | None
    acquired: float
    ttl: float | None
    events: tuple[Event, ...]

    @property
    def expires(self) -> float | None:
        return self.acquired + self.ttl if self.ttl is not None else None

    def first(self, kind: str, after: float = float("-inf")) -> Event | None:
        return next((e for e in self.events if e.kind == kind and e.time >= after), None)

    def writes(self, after: float = float("-inf")) -> list[Event]:
        return [e for e in self.events if e.kind == "write" and e.time >= after]

    def job_span(self, end_of_run: float, stops: Sequence[Stop]) -> tuple[float, float] | None:
        """From the grant to the end of its job: the holder planned its night under the grant,
        so a holder stopped before ``job-start`` is already acting on it."""
        end = self.first("job-end") or self.first("lock-released")
        if end is not None:
            return self.acquired, end.time
        # never ended: a process still stopped is still inside the job; a dead one is not
        for s in stops:
            if s.end is None and s.hits(self.node, self.pid) and s.start >= self.acquired:
                return self.acquired, end_of_run
        if self.first("job-start") is None:
            return None  # it died before its job began
        return self.acquired, self.events[-1].time

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "pid": self.pid, "token": self.token, "night": self.night,
                "acquired": rnd(self.acquired), "expires": rnd(self.expires)}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Application:
    """One change the store applied (from the final state, or from an ``applied`` write event)."""

    order: str
    night: int
    token: int
    node: str
    rev: int | None  # the store's order of application
    time: float | None  # None: in the final state but the service never reported it
    pid: int | None

    def store_order(self) -> tuple[float, float]:
        """Where the store put it: by revision, else (events only) by the report's time."""
        return (
            self.rev if self.rev is not None else float("inf"),
            self.time if self.time is not None else float("inf"),
        )

    def to_json(self) -> dict[str, Any]:
        return {"order": self.order, "night": self.night, "token": self.token, "node": self.node,
                "time": rnd(self.time), "rev": self.rev, "pid": self.pid}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class LockGrant:
    """One grant as the lock record itself shows it: the version that took the lock (a new
    ``locked_by`` / ``locked_at`` / ``token``) and the versions of the same grant after it
    (release, renewal). Times are the record's own (the holder's clock, or the store's)."""

    rev: int  # the etcd revision that wrote the grant
    last_rev: int  # the last version of this grant before the next grant
    node: str
    token: int | None
    locked_at: float | None
    until: float | None  # lock_until as the grant's last version left it
    time: float | None  # the run time of its lock-acquired event, when one matches

    def name(self) -> str:
        where = [f"rev {self.rev}"] if self.rev else []
        if self.time is not None:
            where.append(f"at {at(self.time)}")
        return f"{self.node}'s grant of token {self.token}" + (
            f" ({', '.join(where)})" if where else ""
        )

    def to_json(self) -> dict[str, Any]:
        return {"rev": self.rev, "last_rev": self.last_rev, "node": self.node,
                "token": self.token, "locked_at": self.locked_at, "lock_until": self.until,
                "time": rnd(self.time)}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockShift:
    """A clock fault on one process, from the ledger's ops: its offset (or strobe amplitude, or
    drift rate) from ``start`` to ``end``."""

    node: str
    mode: str
    offset: float | None
    rate: float | None
    start: float
    end: float | None

    def describe(self) -> str:
        if self.rate is not None:
            return f"{self.node}'s clock ran at {self.rate:g}x"
        if self.mode == "strobe":
            return f"{self.node}'s clock strobed by {self.offset:+.1f} s"
        ahead = "ahead" if (self.offset or 0) > 0 else "behind"
        return f"{self.node}'s clock was {abs(self.offset or 0):.1f} s {ahead}"


# ---------------------------------------------------------------- building them


def stops_of(history: Sequence[Op]) -> list[Stop]:
    """Pause/freeze intervals of a history (see :func:`stops_in`)."""
    return stops_in(fault_intervals(list(history)))


def stops_in(faults: Sequence[FaultInterval]) -> list[Stop]:
    """Pause/freeze intervals: from the start's completion to the resume (the heal's
    ``resumed_at`` when recorded, else its completion)."""
    out = [
        Stop(
            fault_id=f.fault_id,
            fault=f.fault,
            node=str(t["node"]),
            pid=as_int(t.get("pid")),
            start=f.start,
            end=f.end,
            trigger=str(f.trigger.get("kind")) if f.trigger else None,
        )
        for f in faults
        if f.stops
        for t in f.targets
        if t.get("node")
    ]
    return sorted(out, key=lambda s: s.start)


def grants_of(events: Sequence[Event]) -> list[Grant]:
    """Every ``lock-acquired`` with a token, with the events of the same process and token from
    then on, in time order."""
    evs = sorted(events, key=lambda e: e.time)
    mine: dict[tuple[str, int | None, int | None], list[Event]] = defaultdict(list)
    for e in evs:
        if e.kind in GRANT_KINDS:
            mine[(e.node, e.pid, as_int(e.data.get("token")))].append(e)
    out = []
    for a in evs:
        token = as_int(a.data.get("token")) if a.kind == "lock-acquired" else None
        if token is None:
            continue
        ttl = a.data.get("ttl")
        out.append(
            Grant(node=a.node, pid=a.pid, token=token, night=as_int(a.data.get("night")),
                  acquired=a.time, ttl=float(ttl) if isinstance(ttl, int | float) else None,
                  events=tuple(e for e in mine[(a.node, a.pid, token)] if e.time >= a.time))
        )  # fmt: skip
    return out


def _acquired_event(acquired: Sequence[Event], node: str, token: Any, locked_at: Any) -> Any:
    return next(
        (
            e
            for e in acquired
            if e.node == node
            and as_int(e.data.get("token")) == token
            and locked_at is not None
            and abs((as_float(e.data.get("locked_at")) or float("inf")) - locked_at) < 1e-6
        ),
        None,
    )


def lock_grants(
    final: Mapping[str, Any] | None, events: Sequence[Event] = ()
) -> list[LockGrant] | None:
    """The grants of the lock record's history (``final["lock_history"]``), in etcd's order of
    writes; None when the final state has no such history (runs stored before issue 11)."""
    if not final or not isinstance(final.get("lock_history"), list):
        return None
    acquired = [e for e in events if e.kind == "lock-acquired"]
    out: list[LockGrant] = []
    ident: tuple[Any, ...] | None = None
    for v in sorted(
        (v for v in final["lock_history"] if isinstance(v, dict) and as_int(v.get("rev"))),
        key=lambda v: int(v["rev"]),
    ):
        me = (v.get("locked_by"), v.get("locked_at"), v.get("token"))
        rev, until = int(v["rev"]), as_float(v.get("lock_until"))
        if ident is not None and me == ident and out:
            g = out[-1]
            out[-1] = LockGrant(rev=g.rev, last_rev=rev, node=g.node, token=g.token,
                                locked_at=g.locked_at, until=until, time=g.time)  # fmt: skip
            continue
        ident = me
        node, token = str(v.get("locked_by")), as_int(v.get("token"))
        locked_at = as_float(v.get("locked_at"))
        ev = _acquired_event(acquired, node, token, locked_at)
        out.append(LockGrant(rev=rev, last_rev=rev, node=node, token=token, locked_at=locked_at,
                             until=until, time=ev.time if ev is not None else None))  # fmt: skip
    return out


def has_final(final: Mapping[str, Any] | None) -> bool:
    return bool(final) and isinstance(final.get("orders"), dict)  # type: ignore[union-attr]


def _reported(events: Sequence[Event]) -> dict[tuple[str, int, int, str], list[Event]]:
    """The services' reports of applied writes, by (order, night, token, node), in time order."""
    out: dict[tuple[str, int, int, str], list[Event]] = defaultdict(list)
    for e in sorted(events, key=lambda e: e.time):
        if e.kind == "write" and e.data.get("outcome") == APPLIED:
            d = e.data
            k = (str(d.get("order")), as_int(d.get("night")) or 0, as_int(d.get("token")) or 0,
                 e.node)  # fmt: skip
            out[k].append(e)
    return out


def applications(events: Sequence[Event], final: Mapping[str, Any] | None) -> list[Application]:
    """Every applied change, joined with the write event that reported it (for time and pid)."""
    reported = _reported(events)
    if not has_final(final):
        return [
            Application(
                order=k[0], night=k[1], token=k[2], node=k[3], rev=None, time=ev.time, pid=ev.pid
            )
            for k, evs in reported.items()
            for ev in evs
        ]
    assert final is not None
    out: list[Application] = []
    for order, row in final["orders"].items():
        for entry in row.get("applied", []):
            k = (str(order), int(entry["night"]), int(entry["token"]), str(entry["node"]))
            ev = reported[k].pop(0) if reported[k] else None
            out.append(
                Application(
                    order=k[0],
                    night=k[1],
                    token=k[2],
                    node=k[3],
                    rev=as_int(entry.get("rev")),
                    time=ev.time if ev else None,
                    pid=ev.pid if ev else None,
                )
            )
    return out


def clock_shifts(faults: Sequence[FaultInterval]) -> list[ClockShift]:
    out = []
    for f in faults:
        if not f.moves_clocks:
            continue
        for t in f.targets:
            if not t.get("node"):
                continue
            off, rate = t.get("offset", t.get("delta")), t.get("rate")
            out.append(
                ClockShift(
                    node=str(t["node"]),
                    mode=str(t.get("mode", "")),
                    offset=float(off) if isinstance(off, int | float) else None,
                    rate=float(rate) if isinstance(rate, int | float) else None,
                    start=f.start,
                    end=f.end,
                )
            )
    return out


# ---------------------------------------------------------------- the model


@dataclass(frozen=True, kw_only=True)
class Lab1Run:
    """One lab1 run as its checkers read it: the stored parts, and what is derived from them,
    each derived once (on first use). Build it with :func:`model_of`."""

    history: Sequence[Op]
    events: Sequence[Event]  # as stored: the order the services' reports were collected in
    final: Mapping[str, Any] | None

    @cached_property
    def faults(self) -> tuple[FaultInterval, ...]:
        return tuple(fault_intervals(self.history))

    @cached_property
    def stops(self) -> tuple[Stop, ...]:
        return tuple(stops_in(self.faults))

    @cached_property
    def grants(self) -> tuple[Grant, ...]:
        return tuple(grants_of(self.events))

    @cached_property
    def lock(self) -> tuple[LockGrant, ...] | None:
        got = lock_grants(self.final, self.events)
        return tuple(got) if got is not None else None

    @cached_property
    def applications(self) -> tuple[Application, ...]:
        return tuple(applications(self.events, self.final))

    @cached_property
    def shifts(self) -> tuple[ClockShift, ...]:
        return tuple(clock_shifts(self.faults))

    @cached_property
    def journal(self) -> Journal | None:
        return read_journal(self.final)

    @cached_property
    def end(self) -> float:
        """The run's last instant anything was recorded."""
        times = [op.time for op in self.history] + [e.time for e in self.events]
        return max(times) if times else 0.0

    @property
    def has_final(self) -> bool:
        return has_final(self.final)

    @property
    def config(self) -> Any:
        """``final["config"]`` as stored (a malformed one fails the checkers that read it)."""
        return (self.final or {}).get("config") or {}

    def grant_of(self, node: str, token: int) -> Grant | None:
        """The first grant of ``token`` to ``node``, by the events."""
        return next((g for g in self.grants if g.node == node and g.token == token), None)


def model_of(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> Lab1Run:
    return Lab1Run(history=tuple(history), events=tuple(events), final=final)
