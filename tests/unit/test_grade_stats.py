"""The Wilson score interval against published values, and the per-cell tallies."""

from __future__ import annotations

import pytest

from chaos.grade.stats import Tally, wilson

# Wilson 95 % intervals as published (e.g. Newcombe 1998, Table I; Brown, Cai & DasGupta 2001),
# to the 4 decimals they give
KNOWN = [
    (0, 10, 0.0, 0.2775),
    (1, 10, 0.0179, 0.4042),
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (5, 5, 0.5655, 1.0),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), KNOWN)
def test_wilson_matches_published_values(k: int, n: int, low: float, high: float) -> None:
    iv = wilson(k, n)
    assert iv.low == pytest.approx(low, abs=5e-5)
    assert iv.high == pytest.approx(high, abs=5e-5)


def test_wilson_is_not_the_wald_interval() -> None:
    # Wald's p ± z·sqrt(p(1-p)/n) collapses to [1, 1] at 5/5; Wilson must not claim certainty
    iv = wilson(5, 5)
    assert iv.low < 0.6 and iv.high == 1.0


def test_wilson_edges() -> None:
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(6, 5)
    for n in (1, 3, 7, 50):
        for k in range(n + 1):
            iv = wilson(k, n)
            assert 0.0 <= iv.low <= k / n <= iv.high <= 1.0
    # symmetric: k successes out of n mirror n-k
    a, b = wilson(3, 11), wilson(8, 11)
    assert a.low == pytest.approx(1 - b.high) and a.high == pytest.approx(1 - b.low)
    # more runs, a narrower interval at the same rate
    assert wilson(50, 100).high - wilson(50, 100).low < wilson(5, 10).high - wilson(5, 10).low


def test_tally() -> None:
    t = Tally(passes=3, runs=5, env_errors=1)
    assert t.fails == 2 and t.pass_rate == 0.6 and t.detection_rate == 0.4
    assert t.flaky
    assert not Tally(passes=5, runs=5).flaky and not Tally(passes=0, runs=5).flaky
    assert Tally().pass_rate is None and not Tally().flaky
    assert t.detection_interval().low == pytest.approx(1 - t.pass_interval().high)
