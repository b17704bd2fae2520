"""The unsafe-lease timeline (``unsafe_lease``), told step by step for each stop of a holder:
A acquires → A stopped → lease expires → B acquires and writes → A resumes and writes.

Each story is an anomaly with its numbered ``steps`` and its ``outcome``; lab1's report page tells
them (chaos.workloads.lab1.report). The writes' harm is judged in the store's order of writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Event
from chaos.workloads.lab1.checkers.clocks import clocks_told
from chaos.workloads.lab1.checkers.common import unknown, valid
from chaos.workloads.lab1.model import (
    APPLIED,
    STALE,
    Application,
    Grant,
    Lab1Run,
    Stop,
    as_int,
    at,
    rnd,
)

Story = dict[str, Any]
Damage = tuple[str, Event, str]


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


def _taker(run: Lab1Run, stop: Stop, a: Grant) -> Grant | None:
    """Another replica that took the lock while ``a`` still acted on its grant: during the stop,
    or after it resumed with a lease that expired while it was stopped (it cannot know)."""
    until = stop.end if stop.end is not None else float("inf")
    if stop.end is not None and a.events and a.expires is not None and a.expires <= stop.end:
        until = max(until, a.events[-1].time)
    return next(
        (
            g
            for g in run.grants
            if (g.node, g.pid) != (a.node, a.pid)
            and g.token > a.token
            and stop.start < g.acquired <= until
        ),
        None,
    )


def _took(story: Story, b: Grant) -> str:
    """The takeover's step; records the taker and its first write in the story."""
    b_write = next(iter(b.writes()), None)
    story["taker"] = b.to_json()
    took = f"{at(b.acquired)} — {b.node} acquired the lock with token {b.token}"
    if b_write is not None:
        took += (
            f" and at {at(b_write.time)} wrote {b_write.data.get('order')}: "
            f"{b_write.data.get('outcome')}"
        )
        story["taker_write"] = {"order": b_write.data.get("order"), "time": rnd(b_write.time),
                                "outcome": b_write.data.get("outcome")}  # fmt: skip
    return took


def _head(a: Grant, b: Grant, stop: Stop, end: float) -> str:
    """The story in one sentence up to a's resumption, in order of time: b's first write only
    when it came before a resumed."""
    expires = a.expires
    b_write = next(iter(b.writes()), None)
    head = (
        f"{a.node} acquired the lock (token {a.token}) at {at(a.acquired)} and was stopped at "
        f"{at(stop.start)}"
        + (f"; its lease expired at {at(expires)}" if expires is not None else "")
    )
    early_write = b_write is not None and b_write.time <= end
    took_s = f"{b.node} acquired it (token {b.token}) at {at(b.acquired)}" + (
        f" and wrote {b_write.data.get('order')} at {at(b_write.time)}"
        if b_write is not None and early_write
        else ""
    )
    resumed_s = f"{a.node} resumed at {at(end)}"
    if b.acquired > end:
        return head + f"; {resumed_s}, its lease already expired; {took_s}"
    return head + f"; {took_s}; {resumed_s}"


def _harm(apps: Sequence[Application], a: Grant, w: Event) -> Damage | None:
    """What one applied write of the resumed holder did, by the store's order of writes."""
    order, night = str(w.data.get("order")), as_int(w.data.get("night"))
    same = [x for x in apps if x.order == order and x.night == night]
    mine = next((x for x in same if x.node == a.node and x.token == a.token), None)
    others = [x for x in same if x is not mine]
    if others:
        o = sorted(others, key=Application.store_order)[0]
        if mine is not None and mine.store_order() < o.store_order():
            # the store's order of writes: the resumed holder got there first
            return ("applied-twice", w,
                    f"its write of {order} of night {night} with token {a.token} at "
                    f"{at(w.time)} was APPLIED first, and {o.node} applied it again with token "
                    f"{o.token} at {at(o.time)}: the change was applied twice")  # fmt: skip
        return ("applied-twice", w,
                f"its write of {order} of night {night} with token {a.token} at {at(w.time)} "
                f"was APPLIED although {o.node} had applied it with token {o.token} at "
                f"{at(o.time)}: the change was applied twice")  # fmt: skip
    newer_before = [
        x
        for x in apps
        if x.order == order and x.token > a.token and mine and x.store_order() < mine.store_order()
    ]
    if newer_before:
        o = newer_before[0]
        return ("stale-applied", w,
                f"its write of {order} with token {a.token} at {at(w.time)} was APPLIED after "
                f"{o.node} had written token {o.token}: the store accepted a stale token")  # fmt: skip
    return None


def _damage(run: Lab1Run, a: Grant, after: Sequence[Event]) -> Damage | None:
    """The first harm a write of the resumed holder did. A write it reported applied, or whose
    outcome it never learnt (its call timed out: the write may still have landed, as a write held
    in the network does) but the store shows applied under its token, counts; one it reported
    rejected does not."""
    for w in after:
        outcome = w.data.get("outcome")
        if outcome != APPLIED and (outcome == STALE or not _landed(run.applications, a, w)):
            continue
        if (d := _harm(run.applications, a, w)) is not None:
            return d
    return None


def _landed(apps: Sequence[Application], a: Grant, w: Event) -> bool:
    """Whether the store holds the application of ``w``'s order and night under ``a``'s grant."""
    order, night = str(w.data.get("order")), as_int(w.data.get("night"))
    return any(
        x.order == order and x.night == night and x.node == a.node and x.token == a.token
        for x in apps
    )


def _ending(run: Lab1Run, story: Story, a: Grant, stop: Stop, end: float, head: str) -> None:
    """How the resumed holder's story ended (``stop``, resumed at ``end``): its outcome, last
    step and summary."""
    steps: list[str] = story["steps"]
    after = a.writes(end)
    story["holder_writes_after_resume"] = [
        {"order": w.data.get("order"), "night": w.data.get("night"), "time": rnd(w.time),
         "outcome": w.data.get("outcome")}
        for w in after
    ]  # fmt: skip
    damage = _damage(run, a, after)
    # from the stop's start: a stopped process reports nothing, so a failed renewal after it is
    # the resumed holder's, and the service's clock put one a hair before the host's record of
    # the SIGCONT once under load (the suite's second stream: "no-write" for "stopped-acting")
    renewal = a.first("renewal-failed", stop.start)
    if damage is not None:
        story["outcome"] = damage[0]
        steps.append(f"{at(damage[1].time)} — {a.node} wrote with its old token: " + damage[2])
        tail = damage[2]
    elif after:
        rejected = [w for w in after if w.data.get("outcome") == STALE]
        w = rejected[0] if rejected else after[0]
        story["outcome"] = "rejected" if rejected else "harmless"
        verb = (
            "rejected as stale"
            if rejected
            else f"{w.data.get('outcome')}, and no change was applied twice"
        )
        tail = f"its write of {w.data.get('order')} with token {a.token} at {at(w.time)} was {verb}"
        steps.append(f"{at(w.time)} — {a.node} wrote with its old token: {tail}")
    elif renewal is not None:
        story["outcome"] = "stopped-acting"
        tail = f"its lease renewal failed at {at(renewal.time)} and it stopped without writing"
        steps.append(f"{at(renewal.time)} — {a.node}: {tail}")
    else:
        story["outcome"] = "no-write"
        tail = f"{a.node} did not write after resuming"
        steps.append(tail)
    story["summary"] = head + "; " + tail


def _begun(a: Grant, stop: Stop) -> Story:
    return {"holder": a.to_json(), "stop": stop.to_json(), "steps": [
        f"{at(a.acquired)} — {a.node} acquired the lock with token {a.token}"
        + (f" for night {a.night}" if a.night is not None else ""),
        f"{at(stop.start)} — the nemesis stopped {a.node} ({stop.fault})"]}  # fmt: skip


def _timeline(run: Lab1Run, stop: Stop) -> Story | None:
    """The unsafe-lease story of one stop, or None when the stopped process held no lock."""
    own = [g for g in run.grants if stop.hits(g.node, g.pid) and g.acquired <= stop.start]
    if not own or not _holds(own[-1], stop.start):
        return None
    a = own[-1]
    story = _begun(a, stop)
    steps: list[str] = story["steps"]
    b = _taker(run, stop, a)
    if b is None:
        story["outcome"] = "no-takeover"
        story["summary"] = (f"{a.node} was stopped ({stop.span()}) while holding the lock "
                            f"(token {a.token}), but no other replica acquired it while {a.node} "
                            "acted on it")  # fmt: skip
        return story
    story["lease_expired"] = rnd(a.expires)
    story["early_takeover"] = a.expires is not None and b.acquired < a.expires
    if a.expires is not None:
        steps.append(f"{at(a.expires)} — {a.node}'s lease expired; stopped, it could not notice")
    steps.append(_took(story, b))
    if stop.end is None:
        story["outcome"] = "not-resumed"
        steps.append(f"{a.node} was never resumed")
        story["summary"] = (f"{a.node} acquired the lock (token {a.token}) at {at(a.acquired)} "
                            f"and was stopped at {at(stop.start)}; {b.node} took over with token "
                            f"{b.token} at {at(b.acquired)}; {a.node} was never resumed")  # fmt: skip
        return story
    resumed = f"{at(stop.end)} — {a.node} resumed, still believing it held the lock"
    # it resumed before the takeover: tell it so
    steps.insert(len(steps) - 1 if b.acquired > stop.end else len(steps), resumed)
    _ending(run, story, a, stop, stop.end, _head(a, b, stop, stop.end))
    return story


def _untold(name: str, told: list[tuple[Stop, Story]], stops: Sequence[Stop],
            stats: dict[str, Any]) -> CheckResult | None:  # fmt: skip
    """Unknown says "the lab's test did not test": the random pause of ``--nemesis pause`` missed
    the holder, or was too short. A stop a trigger aimed at a point of the code is the user's (or
    chaos explore's) own choice of moment, judged by what it did (no-double-apply,
    lease-exclusivity...), and the paused-holder timeline is told only when it applies."""
    stories = [s for _, s in told]
    unfinished = [s for stop, s in told if stop.trigger is None]
    if unfinished:
        return unknown(name, "The paused-holder scenario was not completed: "
                       + unfinished[0]["summary"] + " — stop the holder for longer than "
                       "lockAtMostFor.", stats, anomalies=stories)  # fmt: skip
    holders = {id(stop) for stop, _ in told}
    missed = [s for s in stops if s.trigger is None and id(s) not in holders]
    if missed:
        return unknown(name, f"The nemesis stopped {missed[0].node} at {at(missed[0].start)}, "
                       "but it did not hold the lock then, so the paused-holder scenario was "
                       "not exercised.", stats, anomalies=stories)  # fmt: skip
    return None


def _not_applied(name: str, told: list[tuple[Stop, Story]], stops: Sequence[Stop],
                 acquiring: Sequence[Stop], stats: dict[str, Any]) -> CheckResult:  # fmt: skip
    """No story applies: why, in words."""
    if acquiring and not stops:
        a = acquiring[0]
        return valid(name, f"{a.node} was stopped while acquiring the lock ({a.span()}), "
                     "between its read of the record and its write, not while holding it: the "
                     "paused-holder timeline does not apply (lease-exclusivity judges what its "
                     "write did).", {**stats, "stops_while_acquiring": len(acquiring)})  # fmt: skip
    if stops:
        aimed = stops[0]
        told_of = next((s for stop, s in told if stop is aimed), None)
        how = (
            f"held it, and its timeline was not completed ({told_of['summary']})"
            if told_of is not None
            else "did not hold the lock then"
        )
        return valid(name, f"A trigger stopped {aimed.node} at its {aimed.trigger} point "
                     f"({aimed.span()}); it {how}: the paused-holder timeline does not apply, "
                     "and the other checkers judge what the stop did.",
                     {**stats, "aimed_stops": len(stops)},
                     anomalies=[s for _, s in told])  # fmt: skip
    return valid(name, "No replica was paused, so the unsafe-lease timeline could not occur in "
                 "this run.", stats)  # fmt: skip


def unsafe_lease(run: Lab1Run) -> CheckResult:
    name = "unsafe-lease"
    acquiring = [s for s in run.stops if s.trigger == "acquire-commit"]
    stops = [s for s in run.stops if s.trigger != "acquire-commit"]
    told = [(stop, s) for stop in stops if (s := _timeline(run, stop)) is not None]
    stories = [s for _, s in told]
    complete = [s for s in stories if s["outcome"] not in ("no-takeover", "not-resumed")]
    bad = [s for s in complete if s["outcome"] in ("applied-twice", "stale-applied")]
    stats = {"stops": len(stops), "stops_of_a_holder": len(stories), "timelines": len(complete)}
    if bad:
        return CheckResult(checker=name, verdict=Verdict.INVALID, summary="Unsafe lease: "
                           + bad[0]["summary"] + ".", anomalies=stories, stats=stats)  # fmt: skip
    if complete:
        return valid(name, "Unsafe-lease timeline survived: " + complete[0]["summary"] + ".",
                     stats, anomalies=stories)  # fmt: skip
    return _untold(name, told, stops, stats) or _not_applied(name, told, stops, acquiring, stats)


def unsafe_lease_with_clocks(run: Lab1Run) -> CheckResult:
    """``unsafe_lease``, with the clock faults of the run told after its story: a lease is judged
    by clocks, and a moved one changes when "the lease expired" happened for each replica."""
    r = unsafe_lease(run)
    if not run.shifts:
        return r
    return CheckResult(checker=r.checker, verdict=r.verdict,
                       summary=f"{r.summary} {clocks_told(run.shifts)}", anomalies=r.anomalies,
                       stats={**r.stats, "clock_faults": len(run.shifts)})  # fmt: skip
