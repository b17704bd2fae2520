"""How the run's clocks stood (issue 14): what the clock faults did to a grant, in words."""

from __future__ import annotations

from collections.abc import Sequence

from chaos.workloads.lab1.model import ClockShift, Grant, at

# a clock file is written before the fault's completion op, which waits for the probe
APPLY_LEAD = 1.0


def clock_at(shifts: Sequence[ClockShift], node: str, t: float) -> ClockShift | None:
    return next(
        (
            c
            for c in shifts
            if c.node == node and c.start - APPLY_LEAD <= t and (c.end is None or t <= c.end)
        ),
        None,
    )


def offset_seen(g: Grant, shifts: Sequence[ClockShift]) -> float:
    """A holder's clock offset at its grant: the ledger's, else what the replica reported."""
    c = clock_at(shifts, g.node, g.acquired)
    if c is not None and c.offset is not None and c.mode in ("bump", "skew"):
        return c.offset
    first = g.first("lock-acquired")
    reported = first.data.get("clock_offset") if first is not None else None
    return float(reported) if isinstance(reported, int | float) else 0.0


def clocks_sentence(a: Grant, b: Grant, shifts: Sequence[ClockShift]) -> str:
    """How b's clock stood against a's when b took the lock."""
    named = [c.describe() for n in (b.node, a.node) if (c := clock_at(shifts, n, b.acquired))]
    d = offset_seen(b, shifts) - offset_seen(a, shifts)
    if abs(d) >= 0.05:
        rel = f"{b.node}'s clock was {abs(d):.1f} s {'ahead of' if d > 0 else 'behind'} {a.node}'s"
        return rel + (f" ({'; '.join(named)})" if named else "")
    return "; ".join(named) if named else "no clock was moved"


def clocks_told(shifts: Sequence[ClockShift]) -> str:
    """The run's clock faults, the first four told."""
    told = "; ".join(
        f"{c.describe()} from {at(c.start)} to {at(c.end) if c.end is not None else 'the end'}"
        for c in shifts[:4]
    )
    more = f" (and {len(shifts) - 4} more)" if len(shifts) > 4 else ""
    return f"Clocks: {told}{more}."
