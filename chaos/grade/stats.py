"""Rates with honest error bars: the Wilson score interval, and per-cell tallies.

Wilson rather than the textbook ``p ± z·sqrt(p(1-p)/n)``: with the handful of repeats a grading
affords, 5/5 passes would get the interval [1, 1] from the latter, claiming certainty from five
runs. Wilson's interval stays inside [0, 1] and is wide when n is small (5/5 → [0.57, 1]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# the 97.5th percentile of the standard normal: a two-sided 95 % interval
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval of a binomial proportion ``successes / n``.

    centre = (p + z²/2n) / (1 + z²/n), half-width = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).
    With no trials nothing is known: [0, 1].
    """
    if n <= 0:
        return Interval(0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n} trials")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # at 0/n and n/n the bound is exactly 0 or 1; floats leave dust there (5.6e-17)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)


@dataclass(frozen=True, slots=True)
class Tally:
    """One cell: a submission under one configuration.

    ``runs`` counts graded runs (valid, invalid, unknown, error, timeout); runs the environment
    failed are counted apart in ``env_errors`` and never graded.
    """

    passes: int = 0
    runs: int = 0
    env_errors: int = 0

    @property
    def fails(self) -> int:
        return self.runs - self.passes

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.runs if self.runs else None

    @property
    def detection_rate(self) -> float | None:
        """How often the runs found something wrong (the complement of the pass rate)."""
        return self.fails / self.runs if self.runs else None

    @property
    def flaky(self) -> bool:
        """Both passed and failed under one configuration: a bug that shows only sometimes (or a
        false alarm), never a settled verdict."""
        return 0 < self.passes < self.runs

    def pass_interval(self) -> Interval:
        return wilson(self.passes, self.runs)

    def detection_interval(self) -> Interval:
        return wilson(self.fails, self.runs)
