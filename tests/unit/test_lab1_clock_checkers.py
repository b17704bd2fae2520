"""lab1's night-reruns checker on hand-written runs: a night re-run after the holder's job ended
(lockAtLeastFor shorter than the skew) is invalid and names the clocks; a takeover while the
holder's lease had not really expired is evidence, named with the clocks; one run per night is
valid."""

from __future__ import annotations

from typing import Any

from chaos.checkers.verdict import Verdict
from chaos.histories.ops import Op, OpType
from chaos.workloads.lab1 import checkers
from tests.unit.test_lab1_checkers import ev, final_of, job, judge


def clock_ops(node: str, offset: float, start: float, end: float) -> list[Op]:
    target = {"node": node, "process": "orders", "mode": "skew", "offset": offset}
    ops = []
    for phase, t, f in (("start", start, "clock"), ("heal", end, "heal-clock")):
        for value in ({"target": f"skew={offset}:orders@{node}"}, target):
            ops.append(
                Op(index=len(ops), time=t, process="nemesis", type=OpType.INFO, f=f,
                   value=value, extra={"fault": "clock", "phase": phase, "fault_id": 3})
            )  # fmt: skip
    return ops


def final() -> dict[str, Any]:
    f = final_of([("o1", 3, 1, "n1"), ("o2", 3, 1, "n1")], [3], 0)
    f["config"].update({"unit": 0.1, "lock_at_least": 2.0})
    return f


def test_a_night_run_again_after_the_job_ended_is_invalid_and_names_the_clocks() -> None:
    history = clock_ops("n2", -1.5, 0.5, 5.0)
    events = job("n1", 1, 3, 1.0, ["o1", "o2"]) + job(
        "n2", 2, 3, 2.5, ["o1", "o2"], outcome="already-applied"
    )
    r = judge(checkers.night_reruns, history, events, final())
    assert r.verdict == Verdict.INVALID
    assert r.summary.startswith(
        "Night 3 ran twice: n1 at 1.00 s and n2 at 2.50 s; n2's clock was 1.5 s behind n1's"
    )
    assert "lockAtLeastFor (0.2 s) did not cover it" in r.summary
    assert r.anomalies[0]["first"]["node"] == "n1" and r.anomalies[0]["second"]["node"] == "n2"


def test_a_takeover_before_the_lease_really_expired_is_named_with_the_clock_ahead() -> None:
    history = clock_ops("n2", 4.0, 0.5, 5.0)
    events = [ev(1.0, "n1", "lock-acquired", token=1, night=3, ttl=3.0, until=1e9)]
    events += [ev(1.01, "n1", "job-start", token=1, night=3, orders=["o1", "o2"])]
    events += job("n2", 2, 3, 1.2, ["o1", "o2"])
    events += [ev(1.9, "n1", "job-end", token=1, night=3, outcome="aborted")]
    r = judge(checkers.night_reruns, history, sorted(events, key=lambda e: e.time), final())
    assert r.verdict == Verdict.VALID  # fencing decides the harm: no-double-apply
    assert r.stats["early_takeovers"] == 1
    assert "n2 took the lock for night 3 at 1.20 s while n1's lease ran until 4.00 s" in r.summary
    assert "n2's clock was 4.0 s ahead of n1's" in r.summary


def test_one_run_per_night_is_valid_even_under_a_skew() -> None:
    history = clock_ops("n2", -1.5, 0.5, 5.0)
    events = job("n1", 1, 3, 1.0, ["o1", "o2"]) + job("n2", 2, 4, 2.5, ["o1", "o2"])
    r = judge(checkers.night_reruns, history, events, final())
    assert (
        r.verdict == Verdict.VALID
        and r.summary == "No night's job ran to its end twice (2 nights)."
    )


def test_the_unsafe_lease_story_tells_the_clocks_of_the_run() -> None:
    history = clock_ops("n2", 4.0, 0.5, 5.0)
    events = job("n1", 1, 3, 1.0, ["o1", "o2"])
    r = judge(checkers.CHECKERS["unsafe-lease"], history, events, final())
    assert r.summary.endswith("Clocks: n2's clock was 4.0 s ahead from 0.50 s to 5.00 s.")
    assert r.stats["clock_faults"] == 1
    plain = judge(checkers.CHECKERS["unsafe-lease"], [], events, final())
    assert "Clocks" not in plain.summary


def test_a_grant_that_found_the_night_already_done_is_not_a_rerun() -> None:
    events = job("n1", 1, 3, 1.0, ["o1", "o2"]) + job("n3", 2, 3, 1.5, [])
    r = judge(checkers.night_reruns, [], events, final())
    assert r.verdict == Verdict.VALID
