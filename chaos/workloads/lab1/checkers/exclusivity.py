"""Lease exclusivity (issue 11): no two grants' leases overlap by the lock record's own times
(``locked_at`` / ``lock_until`` of every version of the record, in etcd's order of writes), and no
holder renews after another took over — a renewal placed by the revision its node's proxy
journaled, never by the service's own report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.histories.ops import Event
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.checkers.common import Told, invalid, valid
from chaos.workloads.lab1.model import Grant, Lab1Run, LockGrant, as_float, at, rnd

NAME = "lease-exclusivity"


def _wall_offset(events: Sequence[Event]) -> float | None:
    """Run time minus the record's clock, from the grants' events (``until - ttl`` is the
    holder's clock when it reported the grant): the median, to place the record's times in the
    run for a reader. None without such events."""
    diffs = sorted(
        e.time - (float(e.data["until"]) - float(e.data["ttl"]))
        for e in events
        if e.kind == "lock-acquired"
        and as_float(e.data.get("until")) is not None
        and as_float(e.data.get("ttl")) is not None
        and as_float(e.data.get("locked_at")) is not None
    )
    return diffs[len(diffs) // 2] if diffs else None


def _as_reported(g: Grant) -> LockGrant:
    """A grant as its events report the record (``locked_at``, ``until``; a release's ``until``
    ends the lease): for runs without the record's history."""
    first = g.first("lock-acquired")
    released = g.first("lock-released")
    until = as_float(released.data.get("until")) if released is not None else None
    if until is None and first is not None:
        until = as_float(first.data.get("until"))
    locked_at = as_float(first.data.get("locked_at")) if first is not None else None
    return LockGrant(rev=0, last_rev=0, node=g.node, token=g.token, locked_at=locked_at,
                     until=until, time=g.acquired)  # fmt: skip


def _overlaps(lock: Sequence[LockGrant], source: str, offset: float | None, told: Told) -> None:
    """Each grant locked before the lease of the latest earlier grant it cut into ended."""

    def on_run(x: float) -> str:
        return f"≈{at(x + offset)}" if offset is not None else f"{x:.3f} on the record's clock"

    for j, b in enumerate(lock):
        if b.locked_at is None:
            continue
        # the latest earlier grant whose lease b cut into: the one b overwrote, usually
        a = next(
            (a for a in reversed(lock[:j]) if a.until is not None and b.locked_at < a.until - 1e-6),
            None,
        )
        if a is None or a.until is None:
            continue
        overlap = a.until - b.locked_at
        told.add(f"two grants held the lock at once: {b.name()} was locked at "
                 f"{on_run(b.locked_at)}, {overlap:.2f} s before the lease of {a.name()} ended "
                 f"({on_run(a.until)}), by {source}", kind="leases-overlap",
                 grants=[a.to_json(), b.to_json()], overlap=round(overlap, 6))  # fmt: skip


def _renewal_rev(run: Lab1Run, g: Grant, r: Event) -> int | None:
    """The etcd revision of the renewal ``r`` reports: the last write of the lock record that
    ``g``'s node's proxy forwarded before the report (the author journal — never the service's
    own ``txn`` events). Whatever grant the write names: a renewal that rewrote another
    replica's record is still this replica's renewal."""
    if run.journal is None:
        return None
    config = run.config
    key = keys.lock(
        str(config.get("lock") or keys.JOB) if isinstance(config, Mapping) else keys.JOB
    )
    revs = [
        w.revision
        for w in run.journal.writes
        if w.node == g.node
        and w.wrote
        and w.revision is not None
        and w.time is not None
        and w.time <= r.time
        and any(k == key for k, _, _ in w.puts)
    ]
    return max(revs) if revs else None


def _taken_before_renewal(
    run: Lab1Run, lock: Sequence[LockGrant], g: Grant, r: Event
) -> tuple[str, int | None, str] | None:
    """Another replica's grant made after ``g``'s and before its renewal ``r``: (node, token, when),
    or None. By etcd's revisions when both the renewal's and the grants' are known — a renewal
    whose report came late (its process stopped right after the transaction) is placed where its
    transaction was — else by the events' times."""
    renewed = _renewal_rev(run, g, r)
    mine = next((x for x in lock if x.node == g.node and x.token == g.token), None)
    if renewed is not None and mine is not None:
        taker = next((x for x in lock if x.node != g.node and mine.rev < x.rev < renewed), None)
        if taker is None:
            return None
        return taker.node, taker.token, f"at rev {taker.rev}, before the renewal's rev {renewed}"
    other = next(
        (
            o
            for o in run.grants
            if (o.node, o.pid) != (g.node, g.pid) and g.acquired < o.acquired < r.time
        ),
        None,
    )
    if other is None:
        return None
    return other.node, other.token, f"at {at(other.acquired)}"


def _renewals(run: Lab1Run, lock: Sequence[LockGrant], told: Told) -> int:
    """A holder that renewed after another replica acquired the lock; returns the renewals."""
    renewals = 0
    for g in run.grants:
        for r in (e for e in g.events if e.kind == "lock-renewed"):
            renewals += 1
            other = _taken_before_renewal(run, lock, g, r)
            if other is None:
                continue
            node, token, when = other
            told.add(f"a renewal after losing the lock: {g.node} renewed its lease (token "
                     f"{g.token}) at {at(r.time)} although {node} had acquired the lock (token "
                     f"{token}) {when}: the renewal did not check that {g.node} still held it, "
                     f"and {g.node} went on acting as the holder", kind="renewed-after-losing",
                     grants=[g.to_json(), {"node": node, "token": token}],
                     renewed=rnd(r.time))  # fmt: skip
    return renewals


def lease_exclusivity(run: Lab1Run) -> CheckResult:
    """No grant's lease may begin before an earlier grant's lease ended, by the lock record's own
    times: every version of the record, in etcd's order of writes. A later grant written with a
    ``locked_at`` before the ``lock_until`` an earlier grant had left is two holders at once (an
    acquire that did not compare what it read). And a holder that renewed its lease after
    another replica had taken the lock did not check that it still held it."""
    lock: Sequence[LockGrant] | None = run.lock
    source = "the lock record's own times"
    if lock is None:
        # a run stored before the record's history was read: the grants' own reports of it
        lock = [_as_reported(g) for g in sorted(run.grants, key=lambda g: g.acquired)]
        source = "the times the grants reported"
    told = Told()
    _overlaps(lock, source, _wall_offset(run.events), told)
    overlaps = len(told.anomalies)
    renewals = _renewals(run, lock, told)
    stats: dict[str, Any] = {"grants": len(lock), "renewals": renewals, "overlaps": overlaps,
                             "from": source}  # fmt: skip
    if told:
        return invalid(NAME, told.sentences, told.anomalies, stats)
    tail = f"; {renewals} renewal(s), each by the holder" if renewals else ""
    return valid(NAME, f"No two leases overlapped: each of {len(lock)} grants began after every "
                 f"earlier lease's lock_until, by {source}{tail}.", stats)  # fmt: skip
