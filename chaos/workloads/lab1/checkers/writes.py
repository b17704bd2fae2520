"""The orders' writes: no change applied twice, and stale writes rejected.

- ``no_double_apply``  no change applied twice, per order per night (the lab's acceptance);
- ``stale_writes``     stale writes rejected (count and which); a stale write the store accepted,
                       or two grants sharing a token, is invalid.

Applications are told in the store's order of writes (etcd revisions), never the order of event
times, which are stamped after the fact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.histories.ops import Event
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.checkers.common import Told, invalid, unknown, valid
from chaos.workloads.lab1.model import STALE, Application, Lab1Run, LockGrant, Stop, at, rnd

TIMES = {1: "once", 2: "twice", 3: "three times"}


def lost_lock(
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


def _paused_before(run: Lab1Run, a: Application) -> Stop | None:
    """The stop that froze ``a``'s writer between its grant and this write, if any."""
    if a.time is None:
        return None
    g = run.grant_of(a.node, a.token)
    since = g.acquired if g is not None else float("-inf")
    for s in run.stops:
        if s.hits(a.node, a.pid) and since <= s.start <= a.time and (s.end or a.time) <= a.time:
            return s
    return None


def _describe_app(run: Lab1Run, a: Application) -> str:
    s = f"by {a.node} with token {a.token} at {at(a.time)}"
    p = _paused_before(run, a)
    if p is not None:
        s += f" after {a.node} was paused ({p.span()})"
    lost = lost_lock(a, run.lock)
    if lost is not None:
        had = " and had" if p is not None else f", after {a.node} had"
        s += f"{had} lost the lock to {lost[1].node} (token {lost[1].token})"
    return s


def _twice(run: Lab1Run, order: str, night: int, group: list[Application], told: Told) -> None:
    group = sorted(group, key=Application.store_order)
    times = TIMES.get(len(group), f"{len(group)} times")
    # in the store's order of writes (revisions), first application first
    desc = ", and ".join(_describe_app(run, a) for a in group)
    anomaly: dict[str, Any] = {"order": order, "night": night, "count": len(group),
                               "applications": [a.to_json() for a in group]}  # fmt: skip
    row = (run.final or {}).get("orders", {}).get(order) if run.has_final else None
    if isinstance(row, dict):
        nights = {int(e["night"]) for e in row.get("applied", [])}
        anomaly["balance"] = row.get("balance")
        anomaly["expected_balance"] = sum(keys.change_amount(order, n) for n in nights)
    sentence = f"order {order} of night {night} was applied {times}: {desc}"
    told.sentences.append(sentence)
    told.anomalies.append({**anomaly, "summary": sentence})


def no_double_apply(run: Lab1Run) -> CheckResult:
    name = "no-double-apply"
    by_key: dict[tuple[str, int], list[Application]] = defaultdict(list)
    for a in run.applications:
        by_key[(a.order, a.night)].append(a)
    told = Told()
    for (order, night), group in sorted(by_key.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if len(group) >= 2:
            _twice(run, order, night, group, told)
    stats = {"applications": len(run.applications), "changes": len(by_key),
             "applied_twice": len(told.anomalies),
             "from": "final state" if run.has_final else "events"}  # fmt: skip
    if told:
        return invalid(
            name, told.sentences, told.anomalies, stats, "changes applied more than once"
        )
    if not run.has_final:
        return unknown(name, "The final state was not read, so applications cannot be counted; "
                       "the events alone show no change applied twice.", stats)  # fmt: skip
    return valid(name, f"No change was applied twice: {len(run.applications)} applications of "
                 f"{len(by_key)} (order, night) changes, each exactly once.", stats)  # fmt: skip


# ---------------------------------------------------------------- stale writes


def _accepted_stale(run: Lab1Run, told: Told) -> None:
    """A stale write the store accepted: a lower token applied after a higher one, per order."""
    per_order: dict[str, list[Application]] = defaultdict(list)
    for a in run.applications:
        per_order[a.order].append(a)
    for order, apps in sorted(per_order.items()):
        newest: Application | None = None
        for a in sorted(apps, key=Application.store_order):
            if newest is not None and a.token < newest.token:
                told.add(
                    f"order {order} accepted a stale write: {a.node} wrote night {a.night} "
                    f"with token {a.token} at {at(a.time)} after {newest.node} had written "
                    f"token {newest.token} at {at(newest.time)}",
                    kind="stale-write-accepted", order=order, write=a.to_json(),
                    newer=newest.to_json(),
                )  # fmt: skip
            if newest is None or a.token >= newest.token:
                newest = a


# (node, token, time, name) of one grant, in the order of grants
Granted = tuple[str, int, float | None, str]


def _granted(run: Lab1Run) -> list[Granted]:
    """The grants in order: the lock record's order of writes when it was read, else the events'."""
    if run.lock:
        return [(g.node, g.token, g.time, g.name()) for g in run.lock if g.token is not None]
    return [
        (g.node, g.token, g.acquired, f"{g.node} at {at(g.acquired)}")
        for g in sorted(run.grants, key=lambda g: g.acquired)
    ]


def _token_order(granted: Sequence[Granted], told: Told) -> None:
    """Tokens must increase with every grant — a re-grant to the same process included."""
    top: Granted | None = None
    by_token: dict[int, Granted] = {}
    for grant in granted:
        node, token, t, who = grant
        if top is not None and token <= top[1]:
            same = by_token.get(token)
            if same is not None:
                s = (f"two grants got fencing token {token}: {same[3]} and {who}; a token must "
                     "increase with every grant"
                     + (", also a re-grant to the same replica" if same[0] == node else ""))  # fmt: skip
                kind, before = "token-reused", same
            else:
                s = (f"a token went down: {who} came after {top[3]}: fencing token {token} "
                     f"after {top[1]}; a token must increase with every grant")  # fmt: skip
                kind, before = "token-decreased", top
            told.add(s, kind=kind, token=token, grants=[
                {"node": before[0], "token": before[1], "time": rnd(before[2])},
                {"node": node, "token": token, "time": rnd(t)}])  # fmt: skip
        by_token.setdefault(token, grant)
        if top is None or token > top[1]:
            top = grant


def late_writes(run: Lab1Run) -> list[tuple[Application, tuple[LockGrant, LockGrant]]]:
    """Applications the store accepted after their writer's grant was superseded in the lock
    record (by revisions): fencing lets them through while no newer token wrote that order."""
    out = []
    for a in sorted(run.applications, key=Application.store_order):
        lost = lost_lock(a, run.lock)
        if lost is not None:
            out.append((a, lost))
    return out


def _late_tail(late: Sequence[tuple[Application, tuple[LockGrant, LockGrant]]]) -> str:
    if not late:
        return ""
    a, (_mine, newer) = late[0]
    more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
    return (
        f"; {a.node} wrote {a.order} of night {a.night} with token {a.token} at "
        f"{at(a.time)} after losing the lock to {newer.node} (token {newer.token}){more}, "
        "accepted because no newer token had written that order yet"
    )


def _rejected_json(e: Event) -> dict[str, Any]:
    return {"node": e.node, "pid": e.pid, "token": e.data.get("token"),
            "order": e.data.get("order"), "night": e.data.get("night"), "time": rnd(e.time)}  # fmt: skip


def _rejected_summary(rejected: Sequence[Event], tail: str) -> str:
    listed = "; ".join(
        f"{e.node} with token {e.data.get('token')} on {e.data.get('order')} of "
        f"night {e.data.get('night')} at {at(e.time)}"
        for e in rejected[:3]
    )
    more = f" and {len(rejected) - 3} more" if len(rejected) > 3 else ""
    n = len(rejected)
    return (
        f"{n} stale write{'s were' if n != 1 else ' was'} rejected by the fencing "
        f"token: {listed}{more}{tail}."
    )


def stale_writes(run: Lab1Run) -> CheckResult:
    name = "stale-writes"
    rejected = [
        e
        for e in sorted(run.events, key=lambda e: e.time)
        if e.kind == "write" and e.data.get("outcome") == STALE
    ]
    told = Told()
    _accepted_stale(run, told)
    granted = _granted(run)
    _token_order(granted, told)
    stats = {"rejected": len(rejected), "rejected_writes": [_rejected_json(e) for e in rejected],
             "accepted_stale": sum(1 for a in told.anomalies if a["kind"] == "stale-write-accepted"),
             "grants": len(granted), "grants_from": "lock record" if run.lock else "events"}  # fmt: skip
    if told:
        return invalid(name, told.sentences, told.anomalies, stats)
    late = late_writes(run)
    stats["applied_after_losing_the_lock"] = len(late)
    if rejected:
        return valid(name, _rejected_summary(rejected, _late_tail(late)), stats)
    head = (
        "No stale write was rejected"
        if late
        else "No stale write was attempted: no replica wrote after losing its lease"
    )
    return valid(name, head + _late_tail(late) + ".", stats)
