"""Each machine has its own clock: estimating a node's offset against the orchestrator, NTP-style.

A sample is one round trip: the orchestrator reads its CLOCK_MONOTONIC (``t0``), asks the node for
its own, gets ``remote`` back and reads ``t1``. If the node read its clock somewhere inside the
round trip, ``remote - t`` for the true offset lies within ``(t0 + t1) / 2 ± (t1 - t0) / 2``. Of
many samples the one with the shortest round trip bounds the offset best (NTP's clock filter), so
the estimate is that sample's midpoint and its half round trip is the uncertainty.

Events a node stamps with its monotonic clock are placed on the orchestrator's axis by subtracting
the offset; two events from different machines closer together than the sum of their
uncertainties cannot be ordered by their times alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    t0: float  # the orchestrator's clock when it asked
    remote: float  # the node's clock in its answer
    t1: float  # the orchestrator's clock when the answer arrived

    @property
    def rtt(self) -> float:
        return self.t1 - self.t0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockEstimate:
    """``node clock - orchestrator clock``, within ``± uncertainty`` seconds."""

    offset: float
    uncertainty: float
    samples: int

    def to_local(self, remote: float) -> float:
        """A node's clock reading on the orchestrator's clock."""
        return remote - self.offset

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": round(self.offset, 9),
            "uncertainty": round(self.uncertainty, 9),
            "samples": self.samples,
        }


def estimate(samples: Iterable[Sample]) -> ClockEstimate:
    """The offset from the sample with the shortest round trip; ValueError without a valid one."""
    good = [s for s in samples if s.t1 >= s.t0]
    if not good:
        raise ValueError("no clock sample with a non-negative round trip")
    best = min(good, key=lambda s: s.rtt)
    return ClockEstimate(
        offset=best.remote - (best.t0 + best.t1) / 2,
        uncertainty=best.rtt / 2,
        samples=len(good),
    )


def drift(start: ClockEstimate, end: ClockEstimate) -> dict[str, float]:
    """How far the offset moved between two estimates, and the bound that movement comes with."""
    return {
        "offset_change": round(end.offset - start.offset, 9),
        "uncertainty": round(start.uncertainty + end.uncertainty, 9),
    }
