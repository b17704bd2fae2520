"""lab1: find and tell the unsafe-lease timeline.

A acquires the lock; the nemesis pauses A; A's lease expires; B acquires and writes; A resumes and
writes with its old token — rejected (fencing works) or applied (the change happened twice). This
is the lesson of the lab, so when the events show it the report names it step by step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chaos.report.faults import FaultBand
from chaos.report.loading import EventLike


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsafeLease:
    first: EventLike  # A's lock-acquired
    pause: FaultBand
    second: EventLike  # B's lock-acquired, while A was paused
    second_write: EventLike | None
    stale_write: EventLike | None  # A's write after it resumed
    renewal_failed: EventLike | None

    @property
    def applied_twice(self) -> bool:
        return self.stale_write is not None and self.stale_write.data.get("outcome") == "applied"


def _expiry(ev: EventLike) -> float | None:
    """When the lease granted by ``ev`` ran out, on the run's clock, if the event says."""
    d = ev.data
    until, at, ttl = d.get("until"), d.get("locked_at"), d.get("ttl")
    num = (int, float)
    if isinstance(until, num) and ev.time <= until <= ev.time + 86_400:
        return float(until)  # already on the run's clock
    # A wall-clock ``until`` is not comparable to event times, but its distance from the grant
    # is: the lease lasted until - locked_at (or ttl) from the moment it was acquired.
    if isinstance(until, num) and isinstance(at, num) and 0 <= until - at <= 86_400:
        return ev.time + float(until - at)
    if isinstance(ttl, num) and 0 <= ttl <= 86_400:
        return ev.time + float(ttl)
    return None


def find_unsafe_leases(events: Sequence[EventLike], bands: list[FaultBand]) -> list[UnsafeLease]:
    acquired = [e for e in events if e.kind == "lock-acquired"]
    writes = [e for e in events if e.kind == "write"]
    found: list[UnsafeLease] = []
    for i, a in enumerate(acquired):
        holder_next = next((x.time for x in acquired[i + 1 :] if x.node == a.node), float("inf"))
        released = next(
            (
                x.time
                for x in events
                if x.kind == "lock-released" and x.node == a.node and x.time > a.time
            ),
            float("inf"),
        )
        held_until = min(holder_next, released)
        for p in bands:
            if a.node not in p.nodes or not (a.time <= p.start < held_until):
                continue
            b = next((x for x in acquired if x.node != a.node and p.start < x.time <= p.end), None)
            if b is None:
                continue
            b_write = next((w for w in writes if w.node == b.node and w.time >= b.time), None)
            token = a.data.get("token")
            a_write = next(
                (
                    w
                    for w in writes
                    if w.node == a.node
                    and p.end <= w.time < holder_next
                    and (token is None or w.data.get("token") in (None, token))
                ),
                None,
            )
            renewal = next(
                (
                    x
                    for x in events
                    if x.kind == "renewal-failed"
                    and x.node == a.node
                    and p.end <= x.time < holder_next
                ),
                None,
            )
            found.append(
                UnsafeLease(
                    first=a,
                    pause=p,
                    second=b,
                    second_write=b_write,
                    stale_write=a_write,
                    renewal_failed=renewal,
                )
            )
            break
    return found


def _tok(ev: EventLike) -> str:
    t = ev.data.get("token")
    return f" (fencing token {t})" if t is not None else ""


def narrative(u: UnsafeLease) -> list[str]:
    """Numbered steps, each a sentence with its time."""
    a, b, p = u.first.node, u.second.node, u.pause
    steps = []
    exp = _expiry(u.first)
    lease = f"; lease until {exp:.3f} s" if exp is not None else ""
    steps.append(f"{u.first.time:.3f} s — {a} acquired the lock{_tok(u.first)}{lease}.")
    how = f" ({p.detail['signal']})" if p.detail.get("signal") else ""
    steps.append(
        f"{p.start:.3f} s — the nemesis paused {p.target}{how} while it held the lock "
        f"[{p.fault} {p.fault_id}]."
    )
    if exp is not None and exp <= u.second.time:
        steps.append(f"{exp:.3f} s — {a}'s lease expired; frozen, {a} could not notice.")
    else:
        steps.append(f"{a}'s lease expired while it was paused; frozen, {a} could not notice.")
    s = f"{u.second.time:.3f} s — {b} acquired the lock{_tok(u.second)}"
    if u.second_write is not None:
        out = u.second_write.data.get("outcome", "written")
        s += f" and at {u.second_write.time:.3f} s wrote{_tok(u.second_write)}: {out}"
    steps.append(s + ".")
    healed = "was resumed" if not p.open else "was never resumed by the nemesis"
    steps.append(f"{p.end:.3f} s — {a} {healed}, still believing it held the lock.")
    w = u.stale_write
    if w is None:
        if u.renewal_failed is not None:
            steps.append(
                f"{u.renewal_failed.time:.3f} s — {a}'s lease renewal failed and it did not "
                "write: it stopped acting, as a leader that lost its lease must."
            )
        else:
            steps.append(f"{a} did not write after resuming.")
    elif w.data.get("outcome") == "applied":
        steps.append(
            f"{w.time:.3f} s — {a} wrote with its old lease{_tok(w)}: APPLIED. The change was "
            "applied twice — the lease alone did not give mutual exclusion."
        )
    else:
        out = w.data.get("outcome", "rejected")
        steps.append(
            f"{w.time:.3f} s — {a} wrote with its old lease{_tok(w)}: {out}. The fencing token "
            "stopped the stale write; the change was applied once."
        )
    return steps
