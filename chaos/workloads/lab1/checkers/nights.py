"""The nights: every night reconciled once, and no night's job run twice.

- ``every_night``   every night reconciled: each order has its change for every night that had
                    to run, and its balance adds up;
- ``night_reruns``  a night's job run twice (lockAtLeastFor), early takeovers (clocks).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.checkers.clocks import clocks_sentence
from chaos.workloads.lab1.checkers.common import Told, invalid, unknown, valid
from chaos.workloads.lab1.model import Grant, Lab1Run, as_int, at
from chaos.workloads.systems import record_values


def by_night(run: Lab1Run) -> dict[int, list[Grant]]:
    """The grants of each night, in time order."""
    out: dict[int, list[Grant]] = defaultdict(list)
    for g in run.grants:
        if g.night is not None:
            out[g.night].append(g)
    return out


def _lost_nights(required: set[int], done: Sequence[int], started: Mapping[int, list[Grant]],
                 told: Told) -> None:  # fmt: skip
    for n in sorted(required - set(done)):
        tried = started.get(n, [])
        how = (
            f" (started by {tried[-1].node} with token {tried[-1].token} at "
            f"{at(tried[-1].acquired)}, never finished)"
            if tried
            else " (never started)"
        )
        told.add(f"night {n} was never reconciled{how}", kind="night-lost", night=n,
                 attempts=[g.to_json() for g in tried])  # fmt: skip


def _lost_changes(done: Sequence[int], order_ids: Sequence[Any], orders: Mapping[str, Any],
                  told: Told) -> None:  # fmt: skip
    for n in done:
        for o in order_ids:
            nights = {int(e["night"]) for e in orders.get(o, {}).get("applied", [])}
            if n not in nights:
                told.add(f"night {n} is marked done but order {o} never got its change for it",
                         kind="change-lost", night=n, order=o)  # fmt: skip


def _lost_updates(orders: Mapping[str, Any], told: Told) -> None:
    for o, row in orders.items():
        logged = sum(int(e.get("amount", 0)) for e in row.get("applied", []))
        balance = record_values.as_int(row.get("balance", 0))
        if balance is None:
            # the one reading of integers the record's accounting uses too
            told.add(f"order {o}'s balance is {record_values.describe(row.get('balance'))}: "
                     f"{record_values.int_problem(row.get('balance'))}", kind="unreadable",
                     order=o)  # fmt: skip
        elif balance != logged:
            told.add(f"order {o}'s balance is {row.get('balance')} but its applied changes add "
                     f"up to {logged}: an update was lost", kind="update-lost", order=o,
                     balance=row.get("balance"), applied_sum=logged)  # fmt: skip


def _balances(limit: int, order_ids: Sequence[Any], orders: Mapping[str, Any], told: Told) -> None:
    """Every night ran: each order's balance must be what chaos itself computes the nights add
    (keys.change_amount), whatever the solution logged about its own writes."""
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
            told.add(f"order {o}'s balance is {have} but its {limit} nights add up to {want}: "
                     f"{why}", kind="balance", order=o, balance=have, expected=want)  # fmt: skip


def every_night(run: Lab1Run) -> CheckResult:
    name = "every-night"
    if not run.has_final:
        return unknown(name, "The final state was not read, so finished nights cannot be checked.")
    final, config = run.final or {}, run.config
    limit = as_int(config.get("nights")) or 0
    done = sorted(int(n) for n in final.get("nights_done", []))
    orders: dict[str, Any] = final["orders"]
    order_ids = list(config.get("order_ids") or orders.keys())
    started = by_night(run)
    required = set(range(1, limit + 1)) if limit else set(range(1, (max(done) if done else 0) + 1))
    told = Told()
    _lost_nights(required, done, started, told)
    _lost_changes(done, order_ids, orders, told)
    _lost_updates(orders, told)
    if limit and set(range(1, limit + 1)) <= set(done):
        _balances(limit, order_ids, orders, told)
    in_progress = sorted(n for n in started if n not in done and n not in required)
    stats = {"nights_done": len(done), "nights_required": len(required), "limit": limit,
             "in_progress_at_end": in_progress}  # fmt: skip
    if told:
        return invalid(name, told.sentences, told.anomalies, stats)
    if not required:
        return unknown(name, "No night finished during the run, so reconciliation was never "
                       "shown to work.", stats)  # fmt: skip
    tail = f"; night {in_progress[0]} was still running at the end" if in_progress else ""
    return valid(name, f"All {len(required)} nights were reconciled: every order got its change "
                 f"for every night{tail}.", stats)  # fmt: skip


# ---------------------------------------------------------------- re-runs (issue 14)


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


def _rerun(run: Lab1Run, night: int, a: Grant, b: Grant, told: Told, unit: float) -> None:
    at_least = run.config.get("lock_at_least")
    guard = (
        f"; lockAtLeastFor ({float(at_least) * unit:.1f} s) did not cover it"
        if isinstance(at_least, int | float)
        else ""
    )
    told.add(f"night {night} ran twice: {a.node} at {at(a.acquired)} and {b.node} at "
             f"{at(b.acquired)}; {clocks_sentence(a, b, run.shifts)}{guard}", kind="night-rerun",
             night=night, first=a.to_json(), second=b.to_json())  # fmt: skip


def _early(run: Lab1Run, night: int, a: Grant, b: Grant, takeovers: Told) -> None:
    takeovers.add(f"{b.node} took the lock for night {night} at {at(b.acquired)} while "
                  f"{a.node}'s lease ran until {at(a.expires)}; "
                  f"{clocks_sentence(a, b, run.shifts)}", kind="early-takeover", night=night,
                  holder=a.to_json(), taker=b.to_json())  # fmt: skip


def _reruns_valid(
    name: str, nights: Mapping[int, list[Grant]], stats: dict[str, Any]
) -> CheckResult:
    shared = sorted(n for n, gs in nights.items() if len(gs) > 1)
    tail = (
        f"; night {shared[0]} was taken over after its holder's lease had expired"
        + (f" (and {len(shared) - 1} more)" if len(shared) > 1 else "")
        + ", which the fencing token must make safe"
        if shared
        else ""
    )
    return valid(name, f"No night's job ran to its end twice ({len(nights)} nights){tail}.", stats)


def night_reruns(run: Lab1Run) -> CheckResult:
    """A night's job run to the end twice (the second grant taken after the first job ended: what
    ``lockAtLeastFor`` exists to prevent), or taken over while the holder's lease had not really
    expired (a clock ahead of the holder's). Re-runs are invalid: the lock failed its one promise,
    whatever the writes' idempotency saved. Takeovers are evidence: fencing decides their harm
    (no-double-apply)."""
    name = "night-reruns"
    unit = float(run.config.get("unit") or 0.1)
    nights = by_night(run)
    reruns, takeovers = Told(), Told()
    for night, gs in sorted(nights.items()):
        done = [g for g in gs if _ran(g)]
        for a, b in itertools.pairwise(gs):
            a_end = a.first("job-end")
            if a_end is not None and b.acquired >= a_end.time:
                if a in done and b in done:
                    _rerun(run, night, a, b, reruns, unit)
            elif a.expires is not None and b.acquired < a.expires:
                _early(run, night, a, b, takeovers)
    stats = {"nights": len(nights), "reruns": len(reruns.anomalies),
             "early_takeovers": len(takeovers.anomalies)}  # fmt: skip
    if reruns:
        return invalid(name, reruns.sentences, reruns.anomalies + takeovers.anomalies, stats)
    if takeovers:
        return valid(name, f"No night ran twice; {len(takeovers.anomalies)} early takeover(s): "
                     + takeovers.anomalies[0]["summary"] + ".", stats,
                     anomalies=takeovers.anomalies)  # fmt: skip
    return _reruns_valid(name, nights, stats)
