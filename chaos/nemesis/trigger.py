"""Event triggers: a fault applied at an exact point of the protocol, not by luck.

    pause worker on delivery [for 5s] [until commit] [every time | 3 times]

The phrase names a fault, the role that reaches the point, and the point; the workload's
``HoldPoints`` capability says which hold point a phrase arms (:func:`bind`). The orchestrator arms
the hold file ``hold-<component>-<kind>`` in the run's control folder (any node) with a fresh
generation; the first process that reaches the point claims that arming (``claims/any-<hold>.<gen>``,
created exclusively), reports a ``fault-point`` event with ``data.hold`` and waits. The trigger
applies the fault to exactly that process (node and component from the event, once the claim file
confirms it), then writes ``<hold>.release``: a paused process stays stopped until SIGCONT and only
then reads the release (and acknowledges it in ``claims/any-<hold>.<gen>.released``); a process
whose fault ends it (``dies`` in its row of the fault table: ``kill``) never does, and nothing
waits for its answer. The nemesis ops carry ``trigger`` = the event that fired them.

``until <kind>`` heals early, as soon as another process reports ``<kind>`` for the same task (the
point of a trigger is often "hold A back until B has done it"); ``for`` bounds it anyway.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos.core.capabilities import (
    BROKER_OPS,
    HoldPoint,
    HoldPoints,
    Names,
    TxnPoints,
    WritePoints,
    txn_point,
    write_point,
)
from chaos.core.context import RunContext
from chaos.core.rest import REST_EVERY, RestWatch
from chaos.core.target import Resolved, Target
from chaos.core.workload import Workload
from chaos.histories.ops import Event
from chaos.nemesis.base import Fault
from chaos.nemesis.grudge import isolated_grudge
from chaos.nemesis.plan import parse_duration
from chaos.nemesis.table import BY_NAME, TRIGGER_FAULTS, FaultKind
from chaos.nemesis.targets import did_you_mean

_PHRASE = re.compile(
    r"^\s*(?P<fault>[a-z]+)\s+(?P<role>[a-z][\w-]*)\s+(?P<moment>on|before|after)\s+"
    r"(?P<kind>txn\s+\d+\s+of\s+[a-z_][\w]*|(?:write|read|publish|ack|delivery)\s+of\s+[a-z][\w-]*"
    r"|[a-z][\w-]*)"
    r"(?P<rest>.*)$"
)
_TXN = re.compile(r"^txn\s+(?P<n>\d+)\s+of\s+(?P<fn>[a-z_]\w*)$")
_WRITE = re.compile(r"^(?P<op>write|read|publish|ack|delivery)\s+of\s+(?P<group>[a-z][\w-]*)$")
# a parsed trigger's ``kind`` that names a write or read point (held by the etcd proxy) or a
# broker step (``publish``/``ack``/``delivery``, held by the NATS proxy)
WRITE_KIND = _WRITE
_FOR = re.compile(r"\bfor\s+(?P<d>\S+)")
_UNTIL = re.compile(r"\buntil\s+(?P<k>[a-z][\w-]*)")
_TIMES = re.compile(r"\b(?P<n>\d+)\s+times?\b|\b(?P<every>every\s+time|always)\b")


class TriggerError(ValueError):
    """A trigger phrase that does not parse or names no hold point."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    phrase: str
    fault: str
    role: str
    moment: str
    kind: str
    # the hold point the phrase arms; None until bound to a workload's points (``bind``)
    point: HoldPoint | None = None
    duration: float | None = None
    until: str | None = None
    times: int | None = 1  # None: every time until the run stops
    # the key group of a write point (``after write of counter``, ``after read of dedup``) and
    # which of the two: held by the etcd proxy
    write: str | None = None
    op: str = "write"

    def to_json(self) -> dict[str, Any]:
        return {
            "phrase": self.phrase,
            "fault": self.fault,
            "hold": self.point.file if self.point else None,
            **(
                {
                    "write": self.write,
                    "op": self.op,
                    "decided_by": "nats-proxy" if self.op in BROKER_OPS else "etcd-proxy",
                }
                if self.write
                else {}
            ),
            "duration": self.duration,
            "until": self.until,
            "times": self.times,
        }


def parse_trigger(phrase: str) -> Trigger:
    """Parse a phrase's grammar; which hold point it arms is settled by :func:`bind`."""
    m = _PHRASE.match(phrase)
    if not m:
        raise TriggerError(
            f"trigger {phrase!r}: expected '<fault> <role> on|before|after <event>', "
            "e.g. 'pause worker on delivery'"
        )
    fault, role, moment, rest = m["fault"], m["role"], m["moment"], m["rest"]
    kind = " ".join(m["kind"].split())
    if fault not in TRIGGER_FAULTS:
        raise TriggerError(
            f"trigger {phrase!r}: unknown fault {fault!r}{did_you_mean(fault, TRIGGER_FAULTS)}; "
            f"use {', '.join(TRIGGER_FAULTS)}"
        )
    duration = None
    if fm := _FOR.search(rest):
        try:
            duration = parse_duration(fm["d"])
        except ValueError as e:
            raise TriggerError(f"trigger {phrase!r}: {e}") from None
    until = um["k"] if (um := _UNTIL.search(rest)) else None
    times: int | None = 1
    if tm := _TIMES.search(rest):
        times = None if tm["every"] else int(tm["n"])
    leftover = _TIMES.sub("", _UNTIL.sub("", _FOR.sub("", rest))).strip()
    if leftover:
        raise TriggerError(f"trigger {phrase!r}: did not understand {leftover!r}")
    return Trigger(
        phrase=phrase.strip(),
        fault=fault,
        role=role,
        moment=moment,
        kind=kind,
        duration=duration,
        until=until,
        times=times,
    )


def bind(trigger: Trigger, workload: Workload, workload_name: str) -> Trigger:
    """The trigger with the hold point its ``(role, moment, kind)`` names in the workload's table,
    or the transaction point ``before|after txn N of FN`` of a workload with ``TxnPoints``; its
    ``until`` checked against the event kinds the workload's ``Names`` declares."""
    _check_until(trigger, workload, workload_name)
    if txn := _TXN.match(trigger.kind):
        return dataclasses.replace(trigger, point=_bind_txn(trigger, txn, workload, workload_name))
    if write := _WRITE.match(trigger.kind):
        held = _bind_write(trigger, write["op"], write["group"], workload, workload_name)
        return dataclasses.replace(trigger, point=held, write=write["group"], op=write["op"])
    if not BY_NAME[trigger.fault].scheduled:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: a {trigger.fault} is the etcd proxy's, for a write or "
            f"read point ('{trigger.fault} worker before read of counter for 2s')"
        )
    points = workload.hold_points if isinstance(workload, HoldPoints) else {}
    point = points.get((trigger.role, trigger.moment, trigger.kind))
    if point is None:
        said = f"{trigger.role} {trigger.moment} {trigger.kind}"
        known = [f"{r} {mo} {k}" for r, mo, k in points]
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {workload_name} has no hold point for "
            f"'{said}'{did_you_mean(said, known)}; known: {'; '.join(known) or 'none'}"
        )
    return dataclasses.replace(trigger, point=point)


def _check_until(trigger: Trigger, workload: Workload, name: str) -> None:
    if trigger.until is None or not isinstance(workload, Names):
        return
    kinds = tuple(workload.event_kinds)
    if trigger.until not in kinds:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name}'s processes report no event "
            f"{trigger.until!r}{did_you_mean(trigger.until, kinds)}; they report: "
            f"{', '.join(sorted(kinds))}"
        )


def _bind_txn(trigger: Trigger, m: re.Match[str], workload: Workload, name: str) -> HoldPoint:
    if not isinstance(workload, TxnPoints):
        raise TriggerError(f"trigger {trigger.phrase!r}: {name} has no transaction points")
    fn, n = m["fn"], int(m["n"])
    component = workload.txn_functions.get(fn)
    if component is None:
        known = ", ".join(sorted(workload.txn_functions))
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name} has no function {fn!r} with transaction points; "
            f"known: {known}"
        )
    if trigger.moment not in ("before", "after"):
        raise TriggerError(f"trigger {trigger.phrase!r}: say 'before txn' or 'after txn'")
    if n < 1:
        raise TriggerError(f"trigger {trigger.phrase!r}: transactions are numbered from 1")
    role_component = workload.txn_roles.get(trigger.role, trigger.role)
    if role_component != component:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {fn} runs in {component}, not in {trigger.role}"
        )
    return txn_point(component, trigger.moment, n, fn)


def _bind_write(trigger: Trigger, op: str, group: str, workload: Workload, name: str) -> HoldPoint:
    if op in BROKER_OPS:
        return _bind_broker(trigger, op, group, workload, name)
    if not isinstance(workload, WritePoints) or not isinstance(workload, TxnPoints):
        raise TriggerError(f"trigger {trigger.phrase!r}: {name} has no write points")
    if group not in workload.write_groups:
        known = ", ".join(sorted(workload.write_groups))
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name} has no write group {group!r}"
            f"{did_you_mean(group, tuple(workload.write_groups))}; known: {known}"
        )
    if trigger.moment not in ("before", "after"):
        raise TriggerError(f"trigger {trigger.phrase!r}: say 'before {op}' or 'after {op}'")
    components = set(workload.txn_functions.values())
    component = workload.txn_roles.get(trigger.role, trigger.role)
    if component not in components:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name} has no role {trigger.role!r} that writes; "
            f"known: {', '.join(sorted(components | set(workload.txn_roles)))}"
        )
    if trigger.until is not None:
        # an ``until`` would end the hold on a service's report: the code under test's word
        raise TriggerError(f"trigger {trigger.phrase!r}: a write point takes 'for', not 'until'")
    return write_point(component, trigger.moment, op, group)


def _bind_broker(trigger: Trigger, op: str, group: str, workload: Workload, name: str) -> HoldPoint:
    """A broker step held by the nodes' NATS proxies: ``pause relay before publish of tasks``,
    ``kill worker before|after ack of tasks``, ``pause worker after delivery of tasks``."""
    groups = workload.broker_groups if isinstance(workload, WritePoints) else {}
    if not groups:
        raise TriggerError(f"trigger {trigger.phrase!r}: {name} has no broker points")
    if group not in groups:
        known = ", ".join(sorted(groups))
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name} has no broker group {group!r}"
            f"{did_you_mean(group, tuple(groups))}; known: {known}"
        )
    moments = ("after",) if op == "delivery" else ("before", "after")
    if trigger.moment not in moments:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: say {' or '.join(repr(f'{m} {op}') for m in moments)}"
            + (" (the proxy holds a delivery JetStream made, before the worker gets it)"
               if op == "delivery" else "")
        )  # fmt: skip
    assert isinstance(workload, WritePoints)
    components = tuple(workload.broker_components)
    if trigger.role not in components:
        raise TriggerError(
            f"trigger {trigger.phrase!r}: {name} has no role {trigger.role!r} on the broker; "
            f"known: {', '.join(sorted(components))}"
        )
    if trigger.until is not None:
        raise TriggerError(f"trigger {trigger.phrase!r}: a broker point takes 'for', not 'until'")
    return write_point(trigger.role, trigger.moment, op, group)


def _wait_event(
    ctx: RunContext,
    pred: Callable[[Event], bool],
    since: int,
    timeout: float,
    give_up: threading.Event | None = None,
) -> tuple[Event | None, int]:
    """Wait for an event matching ``pred`` among those seen after index ``since``, at most
    ``timeout`` seconds, or until ``give_up`` is set.

    Counting from an index taken *before* arming means an event another thread polled in the
    meantime is not missed.
    """
    deadline = time.monotonic() + timeout
    while not ctx.stop.is_set():
        ctx.events.poll()
        evs = ctx.events.events
        for i in range(since, len(evs)):
            if pred(evs[i]):
                return evs[i], i + 1
        since = len(evs)
        if time.monotonic() >= deadline or (give_up is not None and give_up.is_set()):
            break
        time.sleep(0.005)
    return None, since


class _RestLookout:
    """Sets ``rested`` once the system is at rest (:class:`RestWatch`) while a later firing is
    awaited. Its own thread: the system's answer is a round trip to the store and the broker,
    which must not slow the wait from seeing a process reach the point (it is held there)."""

    def __init__(self, ctx: RunContext, watch: RestWatch) -> None:
        self.ctx, self.watch = ctx, watch
        self.rested = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._look, name="trigger-rest", daemon=True)

    def __enter__(self) -> _RestLookout:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)

    def _look(self) -> None:
        seen, quiet_since = -1, time.monotonic()
        while not self._done.wait(REST_EVERY / 5):
            now = time.monotonic()
            count = len(self.ctx.events.events)
            if count != seen:  # a new event: a service still at work
                seen, quiet_since = count, now
            if self.watch.still(self.ctx, now, quiet_since):
                self.rested.set()
                return


def aimed_at(kind: FaultKind, ctx: RunContext, node: str, component: str) -> Resolved:
    """What a firing faults, as the fault's row says: ``component`` on ``node``, or ``node`` cut
    off from every other node."""
    if kind.aim == "node":
        return Resolved(spec=node, grudge=isolated_grudge(list(ctx.cluster.nodes), [node]))
    return Resolved(spec=f"{component}@{node}", targets=(Target(node=node, process=component),))


class TriggerNemesis:
    """Arms a hold point and applies a fault to whichever process reaches it."""

    def __init__(
        self,
        trigger: Trigger,
        fault: Fault,
        *,
        default_duration: float,
        wait: float,
        rest: Callable[[], RestWatch] | None = None,
    ) -> None:
        self.trigger = trigger
        self.fault = fault
        self.kind = BY_NAME[trigger.fault]  # its row: whether the process dies, what it aims at
        self.name = f"trigger:{trigger.phrase}"
        self.duration = trigger.duration if trigger.duration is not None else default_duration
        self.wait = wait
        # a later firing (``N times``) is awaited until the system is at rest, if it can tell:
        # nothing left in it can reach the point again (ack-before-commit's first kill loses the
        # task, and the second would be awaited for the whole time limit)
        self.rest = rest
        self.armed = threading.Event()  # ArmsFirst: the client starts once the hold is armed

    def run(self, ctx: RunContext) -> None:
        try:
            self._run(ctx)
        finally:
            self.armed.set()  # never keep the client waiting on a trigger that failed

    def _run(self, ctx: RunContext) -> None:
        fired = 0
        while not ctx.stop.is_set() and (self.trigger.times is None or fired < self.trigger.times):
            if not self._once(ctx, fired):
                return
            fired += 1

    def _once(self, ctx: RunContext, n: int) -> bool:
        tr = self.trigger
        assert tr.point is not None, "bind() the trigger to the workload's hold points first"
        name = tr.point.file
        since = len(ctx.events.events)
        hold_timeout = max(60.0, self.duration + 30.0)
        gen = secrets.token_hex(6)
        ctx.write_control(
            name, json.dumps({"armed_at": ctx.now(), "timeout": hold_timeout, "gen": gen})
        )
        self.armed.set()
        ctx.progress(f"armed {name} for '{tr.phrase}'")
        ev, since, rested = self._await(ctx, name, gen, since, n)
        ctx.remove_control(name)  # one arming, one firing: disarm either way
        if ev is None:
            if rested:
                ctx.progress(
                    f"'{tr.phrase}': the system came to rest after {n} firing(s) without "
                    f"reaching {name} again; no more are awaited"
                )
            else:
                ctx.progress(f"'{tr.phrase}': {name} was never reached")
            return False
        running = ctx.cluster.pid(ev.node, ev.component)
        if ev.component != tr.point.component or running is None or running != ev.pid:
            # the event names the process to fault, in the service's own words: a pid the host
            # does not run there (invented, or a process gone) is no process to fault
            ctx.progress(
                f"'{tr.phrase}': refused: the event names {ev.component} on {ev.node} as pid "
                f"{ev.pid}, the host's is {running}"
            )
            return False
        resolved, trigger = self._aimed(ctx, ev, name, n)
        intent = {"target": resolved.spec, "duration": self.duration, "trigger": tr.phrase}
        try:
            fid = self.fault.start(ctx, resolved, intent=intent, trigger=trigger)
        finally:
            # the held process goes on once it can run: at once (partition), on thaw (freeze),
            # on SIGCONT (pause); a process that died never reads it, so it is removed at heal
            released = {"released_at": ctx.now(), "gen": gen}
            ctx.write_control(f"{name}.release", json.dumps(released), on=ev.node)
        ctx.progress(f"'{tr.phrase}' fired on {ev.node} ({ev.component}, task {ev.task_id})")
        self._last(ctx, ev, since)
        ctx.faults.heal(fid)
        release = f"{name}.release"
        if not self.kind.dies:  # a process that died is not left to read it
            # the resumed process answers its release; arming again before that could let the
            # next firing's process walk past its own hold
            deadline = time.monotonic() + 3.0
            while not ctx.release_answered(name, gen, ev.node) and time.monotonic() < deadline:
                time.sleep(0.01)
        ctx.remove_control(release)
        return True

    def _await(
        self, ctx: RunContext, name: str, gen: str, since: int, n: int
    ) -> tuple[Event | None, int, bool]:
        """The event of a process holding at the armed point, or None after the wait (the time
        limit, or for a later firing the system at rest: the third value says which)."""

        def reached(e: Event) -> bool:
            return bool(
                e.kind == "fault-point"
                and e.data.get("hold")
                and e.data.get("point") == name
                # the event is the service's word; the claim, made with O_EXCL for this arming,
                # is what shows a process really stopped at the point
                and ctx.claimed(name, gen)
            )

        # the first firing waits the whole time: before the client's first request the system
        # is at rest too
        watch = self.rest() if self.rest is not None and n > 0 else None
        if watch is None or not watch.can_tell:
            ev, since = _wait_event(ctx, reached, since, self.wait)
            return ev, since, False
        with _RestLookout(ctx, watch) as lookout:
            ev, since = _wait_event(ctx, reached, since, self.wait, lookout.rested)
        return ev, since, lookout.rested.is_set()

    def _aimed(
        self, ctx: RunContext, ev: Event, name: str, n: int
    ) -> tuple[Resolved, dict[str, Any]]:
        """The fault's target (the process the event names, or its node cut off: its row's
        ``aim``) and the trigger's record of the ``n``-th firing."""
        tr = self.trigger
        resolved = aimed_at(self.kind, ctx, ev.node, ev.component)
        trigger = {
            "phrase": tr.phrase,
            "hold": name,
            "kind": tr.kind,
            "node": ev.node,
            "component": ev.component,
            "pid": ev.pid,
            "task_id": ev.task_id,
            "event_id": ev.event_id,
            "time": round(ev.time, 6),
            "firing": n + 1,
        }
        return resolved, trigger

    def _last(self, ctx: RunContext, ev: Event, since: int) -> None:
        """Let the fault last its duration, or until another process reports the trigger's
        ``until`` event for the same task (never the held process itself)."""
        tr = self.trigger
        if not tr.until:
            ctx.stop.wait(self.duration)
            return
        ctx.events.poll()

        def done(e: Event) -> bool:
            return (
                e.kind == tr.until
                and (e.task_id == ev.task_id or e.event_id == ev.event_id)
                and not (e.node == ev.node and e.component == ev.component and e.pid == ev.pid)
            )

        _wait_event(ctx, done, since, self.duration)
