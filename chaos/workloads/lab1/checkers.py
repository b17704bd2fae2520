"""lab1 checkers: pure functions of (history, events, final state) → CheckResult.

- ``no_double_apply``      no change applied twice, per order per night (the lab's acceptance)
- ``stale_writes``         stale writes rejected (count and which); a stale write the store
                           accepted, or two grants sharing a token, is invalid
- ``every_night``          every night reconciled: each order has its change for every night
                           that had to run, and its balance adds up
- ``overlapping_holders``  two replicas inside the job body at once — evidence, always valid
- ``unsafe_lease``         the unsafe-lease timeline (A acquires → A stopped → lease expires →
                           B acquires and writes → A resumes and writes), told step by step
- ``lease_exclusivity``    no two grants' leases overlap by the lock record's own times
                           (``locked_at`` / ``lock_until`` of every version of the record, in
                           etcd's order of writes), and no holder renews after another took over
- ``night_reruns``         a night's job run twice (lockAtLeastFor), early takeovers (clocks)
- ``lease_authors``        every lease operation and order write by the holder of the grant it
                           touches, by the nodes' etcd-proxy journals (chaos.workloads.lab1.authors)

Narratives follow the store's order of writes (etcd revisions: of the applied records, and of the
lock record's versions), never the order of event times, which are stamped after the fact.

The final state (see chaos.workloads.lab1.final_state) is the authority on what was applied: a write
whose outcome the service never learnt (an etcd timeout) is still in it. Events give the times.
Times in summaries are seconds since the run's origin, the clock of the history and the events.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from chaos.checkers.faults import fault_intervals
from chaos.checkers.journal import read_journal
from chaos.checkers.verdict import CheckResult, Verdict, check_safe
from chaos.histories.ops import Event, Op
from chaos.workloads.lab1 import accounting, keys
from chaos.workloads.lab1.authors import lease_authors
from chaos.workloads.systems import record_values

STOP_FAULTS = ("pause", "freeze")
APPLIED = "applied"
STALE = "rejected-stale"


# ---------------------------------------------------------------- the run's facts


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
        return {
            "fault_id": self.fault_id,
            "fault": self.fault,
            "node": self.node,
            "pid": self.pid,
            "start": _r(self.start),
            "end": _r(self.end),
        }


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
        return {
            "node": self.node,
            "pid": self.pid,
            "token": self.token,
            "night": self.night,
            "acquired": _r(self.acquired),
            "expires": _r(self.expires),
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "night": self.night,
            "token": self.token,
            "node": self.node,
            "time": _r(self.time),
            "rev": self.rev,
            "pid": self.pid,
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _t(x: float | None) -> str:
    return f"{x:.2f} s" if x is not None else "an unknown time"


def _int(x: Any) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def stops_of(history: Sequence[Op]) -> list[Stop]:
    """Pause/freeze intervals: from the start's completion to the resume (the heal's
    ``resumed_at`` when recorded, else its completion)."""
    out = []
    for f in fault_intervals(list(history)):
        if f.fault not in STOP_FAULTS:
            continue
        for t in f.targets:
            if t.get("node"):
                out.append(
                    Stop(
                        fault_id=f.fault_id,
                        fault=f.fault,
                        node=str(t["node"]),
                        pid=_int(t.get("pid")),
                        start=f.start,
                        end=f.end,
                        trigger=str(f.trigger.get("kind")) if f.trigger else None,
                    )
                )
    return sorted(out, key=lambda s: s.start)


def grants_of(events: Sequence[Event]) -> list[Grant]:
    evs = sorted(events, key=lambda e: e.time)
    out = []
    for a in evs:
        if a.kind != "lock-acquired" or _int(a.data.get("token")) is None:
            continue
        token = int(a.data["token"])
        mine = tuple(
            e
            for e in evs
            if e.node == a.node
            and e.pid == a.pid
            and e.time >= a.time
            and _int(e.data.get("token")) == token
            and e.kind
            in (
                "lock-acquired",
                "job-start",
                "write",
                "job-end",
                "lock-released",
                "renewal-failed",
                "lock-renewed",
            )
        )
        ttl = a.data.get("ttl")
        out.append(
            Grant(
                node=a.node,
                pid=a.pid,
                token=token,
                night=_int(a.data.get("night")),
                acquired=a.time,
                ttl=float(ttl) if isinstance(ttl, int | float) else None,
                events=mine,
            )
        )
    return out


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
            where.append(f"at {_t(self.time)}")
        return f"{self.node}'s grant of token {self.token}" + (
            f" ({', '.join(where)})" if where else ""
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rev": self.rev,
            "last_rev": self.last_rev,
            "node": self.node,
            "token": self.token,
            "locked_at": self.locked_at,
            "lock_until": self.until,
            "time": _r(self.time),
        }


def _float(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


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
        (v for v in final["lock_history"] if isinstance(v, dict) and _int(v.get("rev"))),
        key=lambda v: int(v["rev"]),
    ):
        me = (v.get("locked_by"), v.get("locked_at"), v.get("token"))
        if ident is not None and me == ident and out:
            g = out[-1]
            out[-1] = LockGrant(
                rev=g.rev,
                last_rev=int(v["rev"]),
                node=g.node,
                token=g.token,
                locked_at=g.locked_at,
                until=_float(v.get("lock_until")),
                time=g.time,
            )
            continue
        ident = me
        node, token = str(v.get("locked_by")), _int(v.get("token"))
        locked_at = _float(v.get("locked_at"))
        ev = next(
            (
                e
                for e in acquired
                if e.node == node
                and _int(e.data.get("token")) == token
                and locked_at is not None
                and abs((_float(e.data.get("locked_at")) or float("inf")) - locked_at) < 1e-6
            ),
            None,
        )
        out.append(
            LockGrant(
                rev=int(v["rev"]),
                last_rev=int(v["rev"]),
                node=node,
                token=token,
                locked_at=locked_at,
                until=_float(v.get("lock_until")),
                time=ev.time if ev is not None else None,
            )
        )
    return out


def _lost_lock(
    a: Application, lock: Sequence[LockGrant] | None
) -> tuple[LockGrant, LockGrant] | None:
    """When ``a`` was written after its writer's grant had been superseded in the lock record:
    (the writer's grant, the grant that superseded it), by etcd revisions."""
    if not lock or a.rev is None:
        return None
    rev = a.rev
    mine = [g for g in lock if g.node == a.node and g.token == a.token and g.rev < rev]
    if not mine:
        return None
    g = mine[-1]
    later = next((x for x in lock if x.rev > g.rev and x.rev < rev), None)
    return (g, later) if later is not None else None


def _has_final(final: Mapping[str, Any] | None) -> bool:
    return bool(final) and isinstance(final.get("orders"), dict)  # type: ignore[union-attr]


def applications(events: Sequence[Event], final: Mapping[str, Any] | None) -> list[Application]:
    """Every applied change, joined with the write event that reported it (for time and pid)."""
    reported: dict[tuple[str, int, int, str], list[Event]] = defaultdict(list)
    for e in sorted(events, key=lambda e: e.time):
        if e.kind == "write" and e.data.get("outcome") == APPLIED:
            k = (
                str(e.data.get("order")),
                _int(e.data.get("night")) or 0,
                _int(e.data.get("token")) or 0,
                e.node,
            )
            reported[k].append(e)
    out: list[Application] = []
    if _has_final(final):
        assert final is not None
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
                        rev=_int(entry.get("rev")),
                        time=ev.time if ev else None,
                        pid=ev.pid if ev else None,
                    )
                )
    else:
        for k, evs in reported.items():
            for ev in evs:
                out.append(
                    Application(
                        order=k[0],
                        night=k[1],
                        token=k[2],
                        node=k[3],
                        rev=None,
                        time=ev.time,
                        pid=ev.pid,
                    )
                )
    return out


def _store_order(a: Application) -> tuple[float, float]:
    return (
        a.rev if a.rev is not None else float("inf"),
        a.time if a.time is not None else float("inf"),
    )


def _paused_before(a: Application, grants: Sequence[Grant], stops: Sequence[Stop]) -> Stop | None:
    """The stop that froze ``a``'s writer between its grant and this write, if any."""
    if a.time is None:
        return None
    g = next((g for g in grants if g.node == a.node and g.token == a.token), None)
    since = g.acquired if g is not None else float("-inf")
    for s in stops:
        if s.hits(a.node, a.pid) and since <= s.start <= a.time and (s.end or a.time) <= a.time:
            return s
    return None


def _describe_app(
    a: Application,
    grants: Sequence[Grant],
    stops: Sequence[Stop],
    lock: Sequence[LockGrant] | None = None,
) -> str:
    s = f"by {a.node} with token {a.token} at {_t(a.time)}"
    p = _paused_before(a, grants, stops)
    if p is not None:
        s += f" after {a.node} was paused ({p.span()})"
    lost = _lost_lock(a, lock)
    if lost is not None:
        had = " and had" if p is not None else f", after {a.node} had"
        s += f"{had} lost the lock to {lost[1].node} (token {lost[1].token})"
    return s


def _end_of_run(history: Sequence[Op], events: Sequence[Event]) -> float:
    times = [op.time for op in history] + [e.time for e in events]
    return max(times) if times else 0.0


# ---------------------------------------------------------------- checkers


def _invalid(
    name: str,
    sentences: Sequence[str],
    anomalies: list[dict[str, Any]],
    stats: dict[str, Any],
    more_what: str = "",
) -> CheckResult:
    """An invalid result whose summary is the first anomaly's sentence, and how many follow."""
    extra = len(anomalies) - 1
    more = f" (and {extra} more{' ' + more_what if more_what else ''})" if extra > 0 else ""
    first = sentences[0]
    return CheckResult(
        checker=name,
        verdict=Verdict.INVALID,
        summary=first[0].upper() + first[1:] + more + ".",
        anomalies=anomalies,
        stats=stats,
    )


def no_double_apply(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    name = "no-double-apply"
    apps = applications(events, final)
    grants, stops = grants_of(events), stops_of(history)
    lock = lock_grants(final, events)
    by_key: dict[tuple[str, int], list[Application]] = defaultdict(list)
    for a in apps:
        by_key[(a.order, a.night)].append(a)
    anomalies = []
    sentences = []
    for (order, night), group in sorted(by_key.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if len(group) < 2:
            continue
        group = sorted(group, key=_store_order)
        times = {1: "once", 2: "twice", 3: "three times"}.get(len(group), f"{len(group)} times")
        # in the store's order of writes (revisions), first application first
        desc = ", and ".join(_describe_app(a, grants, stops, lock) for a in group)
        sentence = f"order {order} of night {night} was applied {times}: {desc}"
        sentences.append(sentence)
        anomaly: dict[str, Any] = {
            "order": order,
            "night": night,
            "count": len(group),
            "applications": [a.to_json() for a in group],
            "summary": sentence,
        }
        row = (final or {}).get("orders", {}).get(order) if _has_final(final) else None
        if isinstance(row, dict):
            nights = {int(e["night"]) for e in row.get("applied", [])}
            anomaly["balance"] = row.get("balance")
            anomaly["expected_balance"] = sum(keys.change_amount(order, n) for n in nights)
        anomalies.append(anomaly)
    stats = {
        "applications": len(apps),
        "changes": len(by_key),
        "applied_twice": len(anomalies),
        "from": "final state" if _has_final(final) else "events",
    }
    if anomalies:
        return _invalid(name, sentences, anomalies, stats, "changes applied more than once")
    if not _has_final(final):
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="The final state was not read, so applications cannot be counted; the events "
            "alone show no change applied twice.",
            stats=stats,
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"No change was applied twice: {len(apps)} applications of {len(by_key)} "
        "(order, night) changes, each exactly once.",
        stats=stats,
    )


def stale_writes(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    name = "stale-writes"
    rejected = [
        e
        for e in sorted(events, key=lambda e: e.time)
        if e.kind == "write" and e.data.get("outcome") == STALE
    ]
    rejected_json = [
        {
            "node": e.node,
            "pid": e.pid,
            "token": e.data.get("token"),
            "order": e.data.get("order"),
            "night": e.data.get("night"),
            "time": _r(e.time),
        }
        for e in rejected
    ]
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    # a stale write the store accepted: a lower token applied after a higher one, per order
    per_order: dict[str, list[Application]] = defaultdict(list)
    for a in applications(events, final):
        per_order[a.order].append(a)
    for order, apps in sorted(per_order.items()):
        newest: Application | None = None
        for a in sorted(apps, key=_store_order):
            if newest is not None and a.token < newest.token:
                s = (
                    f"order {order} accepted a stale write: {a.node} wrote night {a.night} "
                    f"with token {a.token} at {_t(a.time)} after {newest.node} had written "
                    f"token {newest.token} at {_t(newest.time)}"
                )
                sentences.append(s)
                anomalies.append(
                    {
                        "kind": "stale-write-accepted",
                        "order": order,
                        "write": a.to_json(),
                        "newer": newest.to_json(),
                        "summary": s,
                    }
                )
            if newest is None or a.token >= newest.token:
                newest = a
    # tokens must increase with every grant, in the order of grants (the lock record's order of
    # writes when it was read; the events' otherwise) — a re-grant to the same process included
    lock = lock_grants(final, events)
    granted: list[tuple[str, int, float | None, str]] = []  # (node, token, time, name)
    if lock:
        granted = [(g.node, g.token, g.time, g.name()) for g in lock if g.token is not None]
    else:
        for g in sorted(grants_of(events), key=lambda g: g.acquired):
            granted.append((g.node, g.token, g.acquired, f"{g.node} at {_t(g.acquired)}"))
    top: tuple[str, int, float | None, str] | None = None
    by_token: dict[int, tuple[str, int, float | None, str]] = {}
    for grant in granted:
        node, token, t, who = grant
        if top is not None and token <= top[1]:
            same = by_token.get(token)
            if same is not None:
                s = (
                    f"two grants got fencing token {token}: {same[3]} and {who}; a token must "
                    "increase with every grant"
                    + (", also a re-grant to the same replica" if same[0] == node else "")
                )
                kind, before = "token-reused", same
            else:
                s = (
                    f"a token went down: {who} came after {top[3]}: fencing token {token} "
                    f"after {top[1]}; a token must increase with every grant"
                )
                kind, before = "token-decreased", top
            sentences.append(s)
            anomalies.append(
                {
                    "kind": kind,
                    "token": token,
                    "grants": [
                        {"node": before[0], "token": before[1], "time": _r(before[2])},
                        {"node": node, "token": token, "time": _r(t)},
                    ],
                    "summary": s,
                }
            )
        by_token.setdefault(token, grant)
        if top is None or token > top[1]:
            top = grant
    stats = {
        "rejected": len(rejected),
        "rejected_writes": rejected_json,
        "accepted_stale": sum(1 for a in anomalies if a["kind"] == "stale-write-accepted"),
        "grants": len(granted),
        "grants_from": "lock record" if lock else "events",
    }
    if anomalies:
        return _invalid(name, sentences, anomalies, stats)
    late = _late_writes(events, final, lock)
    stats["applied_after_losing_the_lock"] = len(late)
    late_tail = ""
    if late:
        a, (_mine, newer) = late[0]
        more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
        late_tail = (
            f"; {a.node} wrote {a.order} of night {a.night} with token {a.token} at "
            f"{_t(a.time)} after losing the lock to {newer.node} (token {newer.token}){more}, "
            "accepted because no newer token had written that order yet"
        )
    if not rejected:
        head = (
            "No stale write was rejected"
            if late
            else "No stale write was attempted: no replica wrote after losing its lease"
        )
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary=head + late_tail + ".",
            stats=stats,
        )
    listed = "; ".join(
        f"{e.node} with token {e.data.get('token')} on {e.data.get('order')} of "
        f"night {e.data.get('night')} at {_t(e.time)}"
        for e in rejected[:3]
    )
    more = f" and {len(rejected) - 3} more" if len(rejected) > 3 else ""
    n = len(rejected)
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"{n} stale write{'s were' if n != 1 else ' was'} rejected by the fencing "
        f"token: {listed}{more}{late_tail}.",
        stats=stats,
    )


def _late_writes(
    events: Sequence[Event], final: Mapping[str, Any] | None, lock: Sequence[LockGrant] | None
) -> list[tuple[Application, tuple[LockGrant, LockGrant]]]:
    """Applications the store accepted after their writer's grant was superseded in the lock
    record (by revisions): fencing lets them through while no newer token wrote that order."""
    out = []
    for a in sorted(applications(events, final), key=_store_order):
        lost = _lost_lock(a, lock)
        if lost is not None:
            out.append((a, lost))
    return out


def every_night(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    name = "every-night"
    if not _has_final(final):
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="The final state was not read, so finished nights cannot be checked.",
        )
    assert final is not None
    config = final.get("config") or {}
    limit = _int(config.get("nights")) or 0
    done = sorted(int(n) for n in final.get("nights_done", []))
    orders: dict[str, Any] = final["orders"]
    order_ids = list(config.get("order_ids") or orders.keys())
    started: dict[int, list[Grant]] = defaultdict(list)
    for g in grants_of(events):
        if g.night is not None:
            started[g.night].append(g)
    required = set(range(1, limit + 1)) if limit else set(range(1, (max(done) if done else 0) + 1))
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    for n in sorted(required - set(done)):
        tried = started.get(n, [])
        how = (
            (
                f" (started by {tried[-1].node} with token {tried[-1].token} at "
                f"{_t(tried[-1].acquired)}, never finished)"
            )
            if tried
            else " (never started)"
        )
        s = f"night {n} was never reconciled{how}"
        sentences.append(s)
        anomalies.append(
            {
                "kind": "night-lost",
                "night": n,
                "attempts": [g.to_json() for g in tried],
                "summary": s,
            }
        )
    for n in done:
        for o in order_ids:
            nights = {int(e["night"]) for e in orders.get(o, {}).get("applied", [])}
            if n not in nights:
                s = f"night {n} is marked done but order {o} never got its change for it"
                sentences.append(s)
                anomalies.append({"kind": "change-lost", "night": n, "order": o, "summary": s})
    for o, row in orders.items():
        logged = sum(int(e.get("amount", 0)) for e in row.get("applied", []))
        balance = record_values.as_int(row.get("balance", 0))
        if balance is None:
            # the one reading of integers the record's accounting uses too
            s = (
                f"order {o}'s balance is {record_values.describe(row.get('balance'))}: "
                f"{record_values.int_problem(row.get('balance'))}"
            )
            sentences.append(s)
            anomalies.append({"kind": "unreadable", "order": o, "summary": s})
            continue
        if balance != logged:
            s = (
                f"order {o}'s balance is {row.get('balance')} but its applied changes add up "
                f"to {logged}: an update was lost"
            )
            sentences.append(s)
            anomalies.append(
                {
                    "kind": "update-lost",
                    "order": o,
                    "balance": row.get("balance"),
                    "applied_sum": logged,
                    "summary": s,
                }
            )
    if limit and set(range(1, limit + 1)) <= set(done):
        # every night ran: each order's balance must be what chaos itself computes the nights
        # add (keys.change_amount), whatever the solution logged about its own writes
        for o in order_ids:
            want = sum(keys.change_amount(o, n) for n in range(1, limit + 1))
            have = record_values.as_int((orders.get(o) or {}).get("balance", 0))
            if have is not None and have != want:
                diff = have - want
                why = (
                    f"{diff} more than the {limit} nights' changes: a change was applied twice"
                    if diff > 0
                    else f"{-diff} short of the {limit} nights' changes: a change was lost"
                )
                s = f"order {o}'s balance is {have} but its {limit} nights add up to {want}: {why}"
                sentences.append(s)
                anomalies.append(
                    {"kind": "balance", "order": o, "balance": have, "expected": want, "summary": s}
                )
    in_progress = sorted(n for n in started if n not in done and n not in required)
    stats = {
        "nights_done": len(done),
        "nights_required": len(required),
        "limit": limit,
        "in_progress_at_end": in_progress,
    }
    if anomalies:
        return _invalid(name, sentences, anomalies, stats)
    if not required:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="No night finished during the run, so reconciliation was never shown to work.",
            stats=stats,
        )
    tail = f"; night {in_progress[0]} was still running at the end" if in_progress else ""
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"All {len(required)} nights were reconciled: every order got its change for "
        f"every night{tail}.",
        stats=stats,
    )


def overlapping_holders(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    name = "overlapping-holders"
    stops = stops_of(history)
    end = _end_of_run(history, events)
    spans = [(g, sp) for g in grants_of(events) if (sp := g.job_span(end, stops)) is not None]
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    for i, (a, (a0, a1)) in enumerate(spans):
        for b, (b0, b1) in spans[i + 1 :]:
            if (a.node, a.pid) == (b.node, b.pid):
                continue
            lo, hi = max(a0, b0), min(a1, b1)
            if hi <= lo:
                continue
            paused = sorted(
                {
                    g.node
                    for g in (a, b)
                    for s in stops
                    if s.hits(g.node, g.pid) and s.start < hi and (s.end is None or s.end > lo)
                }
            )
            why = f", {' and '.join(paused)} while paused" if paused else ""
            s = (
                f"replicas {a.node} (token {a.token}) and {b.node} (token {b.token}) were both "
                f"inside the job from {_t(lo)} to {_t(hi)}{why}"
            )
            sentences.append(s)
            anomalies.append(
                {
                    "holders": [a.to_json(), b.to_json()],
                    "from": _r(lo),
                    "to": _r(hi),
                    "paused": paused,
                    "summary": s,
                }
            )
    stats = {"jobs": len(spans), "overlaps": len(anomalies)}
    if not anomalies:
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary="No two replicas were inside the job at the same time.",
            stats=stats,
        )
    more = f" (and {len(anomalies) - 1} more overlaps)" if len(anomalies) > 1 else ""
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=sentences[0][0].upper() + sentences[0][1:] + more + ": expected when a holder "
        "is stopped past its lease — a lease alone is not mutual exclusion, so the "
        "fencing token must keep the writes safe.",
        anomalies=anomalies,
        stats=stats,
    )


def _holds(g: Grant, t: float) -> bool:
    """Whether ``g``'s process believed it held the lock at ``t``."""
    if g.acquired > t:
        return False
    for e in g.events:
        if e.time > t:
            break
        if e.kind == "lock-released" or (e.kind == "job-end" and e.data.get("outcome") != "done"):
            return False
    start = g.first("job-start")
    end = g.first("job-end")
    running = start is not None and start.time <= t and (end is None or end.time > t)
    return g.expires is None or t < g.expires or running


def _timeline(
    stop: Stop, grants: Sequence[Grant], apps: Sequence[Application]
) -> dict[str, Any] | None:
    """The unsafe-lease story of one stop, or None when the stopped process held no lock."""
    own = [g for g in grants if stop.hits(g.node, g.pid) and g.acquired <= stop.start]
    if not own or not _holds(own[-1], stop.start):
        return None
    a = own[-1]
    story: dict[str, Any] = {"holder": a.to_json(), "stop": stop.to_json(), "steps": []}
    steps: list[str] = story["steps"]
    steps.append(
        f"{_t(a.acquired)} — {a.node} acquired the lock with token {a.token}"
        + (f" for night {a.night}" if a.night is not None else "")
    )
    steps.append(f"{_t(stop.start)} — the nemesis stopped {a.node} ({stop.fault})")
    # a takeover counts while a still acted on its grant: during the stop, or after it resumed
    # with a lease that expired while it was stopped (it cannot know, and acts on)
    until = stop.end if stop.end is not None else float("inf")
    if stop.end is not None and a.events and a.expires is not None and a.expires <= stop.end:
        until = max(until, a.events[-1].time)
    b = next(
        (
            g
            for g in grants
            if (g.node, g.pid) != (a.node, a.pid)
            and g.token > a.token
            and stop.start < g.acquired <= until
        ),
        None,
    )
    if b is None:
        story["outcome"] = "no-takeover"
        story["summary"] = (
            f"{a.node} was stopped ({stop.span()}) while holding the lock "
            f"(token {a.token}), but no other replica acquired it while {a.node} acted on it"
        )
        return story
    expires = a.expires
    story["lease_expired"] = _r(expires)
    story["early_takeover"] = expires is not None and b.acquired < expires
    if expires is not None:
        steps.append(f"{_t(expires)} — {a.node}'s lease expired; stopped, it could not notice")
    b_write = next(iter(b.writes()), None)
    story["taker"] = b.to_json()
    took = f"{_t(b.acquired)} — {b.node} acquired the lock with token {b.token}"
    if b_write is not None:
        took += (
            f" and at {_t(b_write.time)} wrote {b_write.data.get('order')}: "
            f"{b_write.data.get('outcome')}"
        )
        story["taker_write"] = {
            "order": b_write.data.get("order"),
            "time": _r(b_write.time),
            "outcome": b_write.data.get("outcome"),
        }
    steps.append(took)
    if stop.end is None:
        story["outcome"] = "not-resumed"
        steps.append(f"{a.node} was never resumed")
        story["summary"] = (
            f"{a.node} acquired the lock (token {a.token}) at {_t(a.acquired)} "
            f"and was stopped at {_t(stop.start)}; {b.node} took over with "
            f"token {b.token} at {_t(b.acquired)}; {a.node} was never resumed"
        )
        return story
    resumed = f"{_t(stop.end)} — {a.node} resumed, still believing it held the lock"
    if b.acquired > stop.end:
        steps.insert(len(steps) - 1, resumed)  # it resumed before the takeover: tell it so
    else:
        steps.append(resumed)
    after = a.writes(stop.end)
    story["holder_writes_after_resume"] = [
        {
            "order": w.data.get("order"),
            "night": w.data.get("night"),
            "time": _r(w.time),
            "outcome": w.data.get("outcome"),
        }
        for w in after
    ]
    head = (
        f"{a.node} acquired the lock (token {a.token}) at {_t(a.acquired)} and was stopped at "
        f"{_t(stop.start)}"
        + (f"; its lease expired at {_t(expires)}" if expires is not None else "")
    )
    # told in order of time: b's first write only when it came before a resumed
    early_write = b_write is not None and b_write.time <= stop.end
    took_s = f"{b.node} acquired it (token {b.token}) at {_t(b.acquired)}" + (
        f" and wrote {b_write.data.get('order')} at {_t(b_write.time)}"
        if b_write is not None and early_write
        else ""
    )
    resumed_s = f"{a.node} resumed at {_t(stop.end)}"
    if b.acquired > stop.end:
        head += f"; {resumed_s}, its lease already expired; {took_s}"
    else:
        head += f"; {took_s}; {resumed_s}"
    damage = None
    for w in after:
        if w.data.get("outcome") != APPLIED:
            continue
        order, night = str(w.data.get("order")), _int(w.data.get("night"))
        same = [x for x in apps if x.order == order and x.night == night]
        mine = next((x for x in same if x.node == a.node and x.token == a.token), None)
        others = [x for x in same if x is not mine]
        newer_before = [
            x
            for x in apps
            if x.order == order
            and x.token > a.token
            and mine
            and _store_order(x) < _store_order(mine)
        ]
        if others:
            o = sorted(others, key=_store_order)[0]
            if mine is not None and _store_order(mine) < _store_order(o):
                # the store's order of writes: the resumed holder got there first
                text = (
                    f"its write of {order} of night {night} with token {a.token} at "
                    f"{_t(w.time)} was APPLIED first, and {o.node} applied it again with token "
                    f"{o.token} at {_t(o.time)}: the change was applied twice"
                )
            else:
                text = (
                    f"its write of {order} of night {night} with token "
                    f"{a.token} at {_t(w.time)} was APPLIED although {o.node} had applied it "
                    f"with token {o.token} at {_t(o.time)}: the change was applied twice"
                )
            damage = ("applied-twice", w, text)
            break
        if newer_before:
            o = newer_before[0]
            damage = (
                "stale-applied",
                w,
                f"its write of {order} with token {a.token} at "
                f"{_t(w.time)} was APPLIED after {o.node} had written token {o.token}: "
                "the store accepted a stale token",
            )
            break
    renewal = a.first("renewal-failed", stop.end)
    if damage is not None:
        story["outcome"] = damage[0]
        steps.append(f"{_t(damage[1].time)} — {a.node} wrote with its old token: " + damage[2])
        story["summary"] = head + "; " + damage[2]
    elif after:
        rejected = [w for w in after if w.data.get("outcome") == STALE]
        w = rejected[0] if rejected else after[0]
        story["outcome"] = "rejected" if rejected else "harmless"
        verb = (
            "rejected as stale"
            if rejected
            else f"{w.data.get('outcome')}, and no change was applied twice"
        )
        tail = f"its write of {w.data.get('order')} with token {a.token} at {_t(w.time)} was {verb}"
        steps.append(f"{_t(w.time)} — {a.node} wrote with its old token: {tail}")
        story["summary"] = head + "; " + tail
    elif renewal is not None:
        story["outcome"] = "stopped-acting"
        tail = f"its lease renewal failed at {_t(renewal.time)} and it stopped without writing"
        steps.append(f"{_t(renewal.time)} — {a.node}: {tail}")
        story["summary"] = head + "; " + tail
    else:
        story["outcome"] = "no-write"
        steps.append(f"{a.node} did not write after resuming")
        story["summary"] = head + f"; {a.node} did not write after resuming"
    return story


def unsafe_lease(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    name = "unsafe-lease"
    stops = stops_of(history)
    grants = grants_of(events)
    apps = applications(events, final)
    acquiring = [s for s in stops if s.trigger == "acquire-commit"]
    stops = [s for s in stops if s.trigger != "acquire-commit"]
    told = [(stop, s) for stop in stops if (s := _timeline(stop, grants, apps)) is not None]
    stories = [s for _, s in told]
    complete = [s for s in stories if s["outcome"] not in ("no-takeover", "not-resumed")]
    bad = [s for s in complete if s["outcome"] in ("applied-twice", "stale-applied")]
    stats = {"stops": len(stops), "stops_of_a_holder": len(stories), "timelines": len(complete)}
    # Unknown says "the lab's test did not test": the random pause of `--nemesis pause` missed
    # the holder, or was too short. A stop a trigger aimed at a point of the code is the user's
    # (or chaos explore's) own choice of moment, judged by what it did (no-double-apply,
    # lease-exclusivity...), and the paused-holder timeline is told only when it applies.
    random_stops = [s for s in stops if s.trigger is None]
    if bad:
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary="Unsafe lease: " + bad[0]["summary"] + ".",
            anomalies=stories,
            stats=stats,
        )
    if complete:
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary="Unsafe-lease timeline survived: " + complete[0]["summary"] + ".",
            anomalies=stories,
            stats=stats,
        )
    unfinished = [s for stop, s in told if stop.trigger is None]
    if unfinished:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="The paused-holder scenario was not completed: "
            + unfinished[0]["summary"]
            + " — stop the holder for longer than lockAtMostFor.",
            anomalies=stories,
            stats=stats,
        )
    holders = {id(stop) for stop, _ in told}
    missed = [s for s in random_stops if id(s) not in holders]
    if missed:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"The nemesis stopped {missed[0].node} at {_t(missed[0].start)}, but it did "
            "not hold the lock then, so the paused-holder scenario was not exercised.",
            anomalies=stories,
            stats=stats,
        )
    if acquiring and not stops:
        a = acquiring[0]
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary=f"{a.node} was stopped while acquiring the lock ({a.span()}), between its "
            "read of the record and its write, not while holding it: the paused-holder "
            "timeline does not apply (lease-exclusivity judges what its write did).",
            stats={**stats, "stops_while_acquiring": len(acquiring)},
        )
    if stops:
        aimed = stops[0]
        told_of = next((s for stop, s in told if stop is aimed), None)
        how = (
            f"held it, and its timeline was not completed ({told_of['summary']})"
            if told_of is not None
            else "did not hold the lock then"
        )
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary=f"A trigger stopped {aimed.node} at its {aimed.trigger} point "
            f"({aimed.span()}); it {how}: the paused-holder timeline does not apply, and the "
            "other checkers judge what the stop did.",
            anomalies=stories,
            stats={**stats, "aimed_stops": len(stops)},
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary="No replica was paused, so the unsafe-lease timeline could not occur in this run.",
        stats=stats,
    )


# ---------------------------------------------------------------- lease exclusivity (issue 11)


def _wall_offset(events: Sequence[Event]) -> float | None:
    """Run time minus the record's clock, from the grants' events (``until - ttl`` is the
    holder's clock when it reported the grant): the median, to place the record's times in the
    run for a reader. None without such events."""
    diffs = sorted(
        e.time - (float(e.data["until"]) - float(e.data["ttl"]))
        for e in events
        if e.kind == "lock-acquired"
        and _float(e.data.get("until")) is not None
        and _float(e.data.get("ttl")) is not None
        and _float(e.data.get("locked_at")) is not None
    )
    return diffs[len(diffs) // 2] if diffs else None


def _grants_as_reported(events: Sequence[Event]) -> list[LockGrant]:
    """The grants as their events report the record (``locked_at``, ``until``; a release's
    ``until`` ends the lease), in order of time: for runs without the record's history."""
    out = []
    for g in sorted(grants_of(events), key=lambda g: g.acquired):
        first = g.first("lock-acquired")
        released = g.first("lock-released")
        until = _float(released.data.get("until")) if released is not None else None
        if until is None and first is not None:
            until = _float(first.data.get("until"))
        out.append(
            LockGrant(
                rev=0,
                last_rev=0,
                node=g.node,
                token=g.token,
                locked_at=_float(first.data.get("locked_at")) if first is not None else None,
                until=until,
                time=g.acquired,
            )
        )
    return out


def lease_exclusivity(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    """No grant's lease may begin before an earlier grant's lease ended, by the lock record's own
    times: every version of the record, in etcd's order of writes. A later grant written with a
    ``locked_at`` before the ``lock_until`` an earlier grant had left is two holders at once (an
    acquire that did not compare what it read). And a holder that renewed its lease after
    another replica had taken the lock did not check that it still held it."""
    name = "lease-exclusivity"
    lock = lock_grants(final, events)
    source = "the lock record's own times"
    if lock is None:
        # a run stored before the record's history was read: the grants' own reports of it
        lock, source = _grants_as_reported(events), "the times the grants reported"
    offset = _wall_offset(events)

    def at(x: float) -> str:
        return f"≈{_t(x + offset)}" if offset is not None else f"{x:.3f} on the record's clock"

    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    for j, b in enumerate(lock or []):
        if b.locked_at is None:
            continue
        # the latest earlier grant whose lease b cut into: the one b overwrote, usually
        a = next(
            (
                a
                for a in reversed((lock or [])[:j])
                if a.until is not None and b.locked_at < a.until - 1e-6
            ),
            None,
        )
        if a is None or a.until is None:
            continue
        overlap = a.until - b.locked_at
        s = (
            f"two grants held the lock at once: {b.name()} was locked at {at(b.locked_at)}, "
            f"{overlap:.2f} s before the lease of {a.name()} ended ({at(a.until)}), by {source}"
        )
        sentences.append(s)
        anomalies.append(
            {
                "kind": "leases-overlap",
                "grants": [a.to_json(), b.to_json()],
                "overlap": round(overlap, 6),
                "summary": s,
            }
        )
    # renewals: a holder that renewed after another replica acquired the lock, in etcd's order
    # of writes where the run has it (the renewal's transaction revision against the grants'),
    # else by the services' event times
    grants = grants_of(events)
    renewals = 0
    for g in grants:
        for r in (e for e in g.events if e.kind == "lock-renewed"):
            renewals += 1
            other = _taken_before_renewal(g, r, grants, lock, final)
            if other is None:
                continue
            node, token, when = other
            s = (
                f"a renewal after losing the lock: {g.node} renewed its lease (token {g.token}) "
                f"at {_t(r.time)} although {node} had acquired the lock (token {token}) "
                f"{when}: the renewal did not check that {g.node} still held it, "
                f"and {g.node} went on acting as the holder"
            )
            sentences.append(s)
            anomalies.append(
                {
                    "kind": "renewed-after-losing",
                    "grants": [g.to_json(), {"node": node, "token": token}],
                    "renewed": _r(r.time),
                    "summary": s,
                }
            )
    stats: dict[str, Any] = {
        "grants": len(lock),
        "renewals": renewals,
        "overlaps": sum(1 for x in anomalies if x["kind"] == "leases-overlap"),
        "from": source,
    }
    if anomalies:
        return _invalid(name, sentences, anomalies, stats)
    tail = f"; {renewals} renewal(s), each by the holder" if renewals else ""
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"No two leases overlapped: each of {len(lock)} grants began after every "
        f"earlier lease's lock_until, by {source}{tail}.",
        stats=stats,
    )


def _renewal_rev(g: Grant, r: Event, final: Mapping[str, Any] | None) -> int | None:
    """The etcd revision of the renewal ``r`` reports: the last write of the lock record that
    ``g``'s node's proxy forwarded before the report (the author journal — never the service's
    own ``txn`` events). Whatever grant the write names: a renewal that rewrote another
    replica's record is still this replica's renewal."""
    journal = read_journal(final)
    if journal is None:
        return None
    config = (final or {}).get("config") or {}
    key = keys.lock(
        str(config.get("lock") or keys.JOB) if isinstance(config, Mapping) else keys.JOB
    )
    revs = [
        w.revision
        for w in journal.writes
        if w.node == g.node
        and w.wrote
        and w.revision is not None
        and w.time is not None
        and w.time <= r.time
        and any(k == key for k, _, _ in w.puts)
    ]
    return max(revs) if revs else None


def _taken_before_renewal(
    g: Grant,
    r: Event,
    grants: Sequence[Grant],
    lock: Sequence[LockGrant] | None,
    final: Mapping[str, Any] | None,
) -> tuple[str, int | None, str] | None:
    """Another replica's grant made after ``g``'s and before its renewal ``r``: (node, token, when),
    or None. By etcd's revisions when both the renewal's and the grants' are known — a renewal
    whose report came late (its process stopped right after the transaction) is placed where its
    transaction was — else by the events' times."""
    renewed = _renewal_rev(g, r, final)
    mine = next((x for x in lock or [] if x.node == g.node and x.token == g.token), None)
    if renewed is not None and mine is not None:
        taker = next(
            (x for x in lock or [] if x.node != g.node and mine.rev < x.rev < renewed), None
        )
        if taker is None:
            return None
        return taker.node, taker.token, f"at rev {taker.rev}, before the renewal's rev {renewed}"
    other = next(
        (
            o
            for o in grants
            if (o.node, o.pid) != (g.node, g.pid) and g.acquired < o.acquired < r.time
        ),
        None,
    )
    if other is None:
        return None
    return other.node, other.token, f"at {_t(other.acquired)}"


# ---------------------------------------------------------------- clocks (issue 14)


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


def clock_shifts(history: Sequence[Op]) -> list[ClockShift]:
    out = []
    for f in fault_intervals(list(history)):
        if f.fault != "clock":
            continue
        for t in f.targets:
            if not t.get("node"):
                continue
            off = t.get("offset", t.get("delta"))
            rate = t.get("rate")
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


# a clock file is written before the fault's completion op, which waits for the probe
APPLY_LEAD = 1.0


def _clock_at(shifts: Sequence[ClockShift], node: str, t: float) -> ClockShift | None:
    return next(
        (
            c
            for c in shifts
            if c.node == node and c.start - APPLY_LEAD <= t and (c.end is None or t <= c.end)
        ),
        None,
    )


def _ran(g: Grant) -> bool:
    """The grant ran its night's job to the end with work to do (a job that found every order
    already reconciled, ``orders: []``, did nothing twice)."""
    start, end = g.first("job-start"), g.first("job-end")
    return (
        start is not None
        and bool(start.data.get("orders"))
        and end is not None
        and end.data.get("outcome") == "done"
    )


def _offset_seen(g: Grant, shifts: Sequence[ClockShift]) -> float:
    """A holder's clock offset at its grant: the ledger's, else what the replica reported."""
    c = _clock_at(shifts, g.node, g.acquired)
    if c is not None and c.offset is not None and c.mode in ("bump", "skew"):
        return c.offset
    first = g.first("lock-acquired")
    reported = first.data.get("clock_offset") if first is not None else None
    return float(reported) if isinstance(reported, int | float) else 0.0


def _clocks_sentence(a: Grant, b: Grant, shifts: Sequence[ClockShift]) -> str:
    """How b's clock stood against a's when b took the lock."""
    named = [c.describe() for n in (b.node, a.node) if (c := _clock_at(shifts, n, b.acquired))]
    d = _offset_seen(b, shifts) - _offset_seen(a, shifts)
    if abs(d) >= 0.05:
        rel = f"{b.node}'s clock was {abs(d):.1f} s {'ahead of' if d > 0 else 'behind'} {a.node}'s"
        return rel + (f" ({'; '.join(named)})" if named else "")
    return "; ".join(named) if named else "no clock was moved"


def night_reruns(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    """A night's job run to the end twice (the second grant taken after the first job ended: what
    ``lockAtLeastFor`` exists to prevent), or taken over while the holder's lease had not really
    expired (a clock ahead of the holder's). Re-runs are invalid: the lock failed its one promise,
    whatever the writes' idempotency saved. Takeovers are evidence: fencing decides their harm
    (no-double-apply)."""
    name = "night-reruns"
    shifts = clock_shifts(history)
    config = (final or {}).get("config") or {}
    unit = float(config.get("unit") or 0.1)
    at_least = config.get("lock_at_least")
    by_night: dict[int, list[Grant]] = defaultdict(list)
    for g in grants_of(events):
        if g.night is not None:
            by_night[g.night].append(g)
    anomalies: list[dict[str, Any]] = []
    sentences: list[str] = []
    takeovers: list[dict[str, Any]] = []
    for night, gs in sorted(by_night.items()):
        done = [g for g in gs if _ran(g)]
        for a, b in itertools.pairwise(gs):
            a_end = a.first("job-end")
            if a_end is not None and b.acquired >= a_end.time:
                if a in done and b in done:
                    guard = (
                        f"; lockAtLeastFor ({float(at_least) * unit:.1f} s) did not cover it"
                        if isinstance(at_least, int | float)
                        else ""
                    )
                    sent = (
                        f"night {night} ran twice: {a.node} at {_t(a.acquired)} and {b.node} at "
                        f"{_t(b.acquired)}; {_clocks_sentence(a, b, shifts)}{guard}"
                    )
                    sentences.append(sent)
                    anomalies.append(
                        {
                            "kind": "night-rerun",
                            "night": night,
                            "first": a.to_json(),
                            "second": b.to_json(),
                            "summary": sent,
                        }
                    )
            elif a.expires is not None and b.acquired < a.expires:
                sent = (
                    f"{b.node} took the lock for night {night} at {_t(b.acquired)} while "
                    f"{a.node}'s lease ran until {_t(a.expires)}; {_clocks_sentence(a, b, shifts)}"
                )
                takeovers.append(
                    {
                        "kind": "early-takeover",
                        "night": night,
                        "holder": a.to_json(),
                        "taker": b.to_json(),
                        "summary": sent,
                    }
                )
    stats = {"nights": len(by_night), "reruns": len(anomalies), "early_takeovers": len(takeovers)}
    if anomalies:
        return _invalid(name, sentences, anomalies + takeovers, stats)
    if takeovers:
        return CheckResult(
            checker=name,
            verdict=Verdict.VALID,
            summary=f"No night ran twice; {len(takeovers)} early takeover(s): "
            + takeovers[0]["summary"]
            + ".",
            anomalies=takeovers,
            stats=stats,
        )
    shared = sorted(n for n, gs in by_night.items() if len(gs) > 1)
    tail = (
        f"; night {shared[0]} was taken over after its holder's lease had expired"
        + (f" (and {len(shared) - 1} more)" if len(shared) > 1 else "")
        + ", which the fencing token must make safe"
        if shared
        else ""
    )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"No night's job ran to its end twice ({len(by_night)} nights){tail}.",
        stats=stats,
    )


def unsafe_lease_with_clocks(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> CheckResult:
    """``unsafe_lease``, with the clock faults of the run told after its story: a lease is judged
    by clocks, and a moved one changes when "the lease expired" happened for each replica."""
    r = unsafe_lease(history, events, final)
    shifts = clock_shifts(history)
    if not shifts:
        return r
    told = "; ".join(
        f"{c.describe()} from {_t(c.start)} to {_t(c.end) if c.end is not None else 'the end'}"
        for c in shifts[:4]
    )
    more = f" (and {len(shifts) - 4} more)" if len(shifts) > 4 else ""
    return CheckResult(
        checker=r.checker,
        verdict=r.verdict,
        summary=f"{r.summary} Clocks: {told}{more}.",
        anomalies=r.anomalies,
        stats={**r.stats, "clock_faults": len(shifts)},
    )


CHECKERS: dict[
    str, Callable[[Sequence[Op], Sequence[Event], Mapping[str, Any] | None], CheckResult]
] = {
    "no-double-apply": no_double_apply,
    "stale-writes": stale_writes,
    "every-night": every_night,
    "overlapping-holders": overlapping_holders,
    "unsafe-lease": unsafe_lease_with_clocks,
    "night-reruns": night_reruns,
    "lease-exclusivity": lease_exclusivity,
    "exactly-once": accounting.exactly_once,
    "lease-authors": lease_authors,
}


def contradictions(results: Sequence[CheckResult]) -> list[str]:
    """Pairs of lab1 verdicts on one run that cannot both be true, in words (none expected).

    The checkers read one run from different sides — the writes' own events, etcd's final rows,
    the lock record's versions — so where one says a change was applied twice and another that
    everything adds up, one of them is wrong."""
    by = {r.checker: r for r in results}
    out: list[str] = []
    twice, nights, lease = by.get("no-double-apply"), by.get("every-night"), by.get("unsafe-lease")
    if twice and nights and twice.verdict is Verdict.INVALID and nights.verdict is Verdict.VALID:
        limit, done = nights.stats.get("limit"), nights.stats.get("nights_done")
        if isinstance(limit, int) and isinstance(done, int) and limit and done >= limit:
            out.append("no-double-apply found a change applied twice, yet every-night found every "
                       "balance equal to its nights' changes")  # fmt: skip
    above = [
        a
        for a in (nights.anomalies if nights else [])
        if a.get("kind") == "balance"
        and isinstance(a.get("balance"), int)
        and isinstance(a.get("expected"), int)
        and a["balance"] > a["expected"]
    ]
    if above and twice and twice.verdict is Verdict.VALID:
        out.append("every-night found a balance above its nights' changes, yet no-double-apply "
                   "found no change applied twice")  # fmt: skip
    told_twice = [
        a for a in (lease.anomalies if lease else []) if a.get("outcome") == "applied-twice"
    ]
    if told_twice and twice and twice.verdict is Verdict.VALID:
        out.append("unsafe-lease told a change applied twice, yet no-double-apply found none")
    return out


def check(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> list[CheckResult]:
    """All lab1 checkers; one that crashes becomes ``unknown`` without hiding the others."""
    return [check_safe(name, partial(fn, history, events, final)) for name, fn in CHECKERS.items()]
