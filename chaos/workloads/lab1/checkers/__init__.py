"""lab1 checkers: each a function of the lab's model of one run (chaos.workloads.lab1.model)
→ CheckResult, the model built once per check.

- ``no-double-apply``      no change applied twice, per order per night (the lab's acceptance)
- ``stale-writes``         stale writes rejected; a stale write the store accepted, or two grants
                           sharing a token, is invalid                          (``writes``)
- ``every-night``          every night reconciled, and its balance adds up      (``nights``)
- ``overlapping-holders``  two replicas inside the job body at once — evidence  (``holders``)
- ``unsafe-lease``         the unsafe-lease timeline, told step by step         (``lease_story``)
- ``night-reruns``         a night's job run twice (lockAtLeastFor), early takeovers (``nights``)
- ``lease-exclusivity``    no two grants' leases overlap by the lock record's own times, and no
                           holder renews after another took over                (``exclusivity``)
- ``exactly-once``         every revision of etcd's record accounted for (chaos.workloads.lab1.accounting)
- ``lease-authors``        every lease operation and order write by the holder of the grant it
                           touches, by the nodes' etcd-proxy journals (chaos.workloads.lab1.authors)
- ``etcd-scope``           no call the nodes' etcd proxies refused (a key outside /lab1/, Auth,
                           compaction, ...)                                     (chaos.checkers.etcd_scope)

Narratives follow the store's order of writes (etcd revisions: of the applied records, and of the
lock record's versions), never the order of event times, which are stamped after the fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaos.checkers.etcd_scope import etcd_scope
from chaos.checkers.verdict import CheckResult, ModelChecker, Verdict, run_checkers
from chaos.histories.ops import Event, Op
from chaos.workloads.lab1.accounting import exactly_once
from chaos.workloads.lab1.authors import lease_authors
from chaos.workloads.lab1.checkers.exclusivity import lease_exclusivity
from chaos.workloads.lab1.checkers.holders import overlapping_holders
from chaos.workloads.lab1.checkers.lease_story import unsafe_lease, unsafe_lease_with_clocks
from chaos.workloads.lab1.checkers.nights import every_night, night_reruns
from chaos.workloads.lab1.checkers.writes import no_double_apply, stale_writes
from chaos.workloads.lab1.model import Lab1Run, model_of, stops_of

__all__ = [
    "CHECKERS",
    "CheckResult",
    "Lab1Run",
    "check",
    "check_run",
    "contradictions",
    "every_night",
    "exactly_once",
    "lease_authors",
    "lease_exclusivity",
    "model_of",
    "night_reruns",
    "no_double_apply",
    "overlapping_holders",
    "stale_writes",
    "stops_of",
    "unsafe_lease",
]

CHECKERS: dict[str, ModelChecker[Lab1Run]] = {
    "no-double-apply": no_double_apply,
    "stale-writes": stale_writes,
    "every-night": every_night,
    "overlapping-holders": overlapping_holders,
    "unsafe-lease": unsafe_lease_with_clocks,
    "night-reruns": night_reruns,
    "lease-exclusivity": lease_exclusivity,
    "exactly-once": exactly_once,
    "lease-authors": lease_authors,
    "etcd-scope": lambda run: etcd_scope(run.final),
}


def check_run(run: Lab1Run) -> list[CheckResult]:
    """All lab1 checkers over one model; one that crashes becomes ``unknown`` without hiding the
    others."""
    return run_checkers(CHECKERS, run)


def check(
    history: Sequence[Op], events: Sequence[Event], final: Mapping[str, Any] | None
) -> list[CheckResult]:
    """All lab1 checkers on one run's stored parts: its model built once."""
    return check_run(model_of(history, events, final))


def _twice_but_adds_up(twice: CheckResult | None, nights: CheckResult | None) -> bool:
    if not (twice and nights and twice.verdict is Verdict.INVALID):
        return False
    limit, done = nights.stats.get("limit"), nights.stats.get("nights_done")
    return (
        nights.verdict is Verdict.VALID
        and isinstance(limit, int)
        and isinstance(done, int)
        and bool(limit)
        and done >= limit
    )


def contradictions(results: Sequence[CheckResult]) -> list[str]:
    """Pairs of lab1 verdicts on one run that cannot both be true, in words (none expected).

    The checkers read one run from different sides — the writes' own events, etcd's final rows,
    the lock record's versions — so where one says a change was applied twice and another that
    everything adds up, one of them is wrong."""
    by = {r.checker: r for r in results}
    out: list[str] = []
    twice, nights, lease = by.get("no-double-apply"), by.get("every-night"), by.get("unsafe-lease")
    if _twice_but_adds_up(twice, nights):
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
