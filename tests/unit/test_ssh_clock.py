"""Placing a machine's events on the orchestrator's time axis: offset and uncertainty from round
trips (NTP's shortest-round-trip filter), on synthetic samples whose true offset is known."""

from __future__ import annotations

import random

import pytest

from chaos.cluster.ssh.clock import Sample, drift, estimate


def samples(offset: float, n: int, seed: int) -> list[Sample]:
    """Round trips with random, asymmetric delays; the node reads its clock somewhere inside."""
    rng = random.Random(seed)
    out, t = [], 100.0
    for _ in range(n):
        out_delay, back_delay = rng.uniform(0.0002, 0.02), rng.uniform(0.0002, 0.05)
        t0 = t
        remote = t0 + out_delay + offset
        out.append(Sample(t0=t0, remote=remote, t1=t0 + out_delay + back_delay))
        t += 0.1
    return out


@pytest.mark.parametrize("offset", [0.0, 5.0, -1234.5678])
def test_the_true_offset_lies_within_the_estimate_and_its_uncertainty(offset: float) -> None:
    for seed in range(20):
        got = samples(offset, 16, seed)
        est = estimate(got)
        assert abs(est.offset - offset) <= est.uncertainty + 1e-12
        # the shortest round trip wins: its half is the uncertainty
        assert est.uncertainty == pytest.approx(min(s.rtt for s in got) / 2)
        assert est.samples == 16


def test_a_node_reading_becomes_the_orchestrators_time() -> None:
    est = estimate([Sample(t0=10.0, remote=15.001, t1=10.002)])
    assert est.offset == pytest.approx(5.0) and est.uncertainty == pytest.approx(0.001)
    # an event the node stamped 20.5 happened near 15.5 on the orchestrator's clock
    assert est.to_local(20.5) == pytest.approx(15.5)


def test_a_long_round_trip_does_not_spoil_a_short_one() -> None:
    short = Sample(t0=0.0, remote=3.0005, t1=0.001)
    skewed = Sample(t0=1.0, remote=4.9, t1=2.0)  # a 1 s stall, answered late
    est = estimate([skewed, short])
    assert est.offset == pytest.approx(3.0) and est.uncertainty == pytest.approx(0.0005)


def test_drift_between_start_and_end_estimates() -> None:
    a = estimate([Sample(t0=0.0, remote=1.0, t1=0.002)])
    b = estimate([Sample(t0=100.0, remote=101.01, t1=100.002)])
    d = drift(a, b)
    assert d["offset_change"] == pytest.approx(0.01)
    assert d["uncertainty"] == pytest.approx(0.002)


def test_no_usable_sample_is_an_error() -> None:
    with pytest.raises(ValueError, match="no clock sample"):
        estimate([Sample(t0=2.0, remote=1.0, t1=1.0)])
