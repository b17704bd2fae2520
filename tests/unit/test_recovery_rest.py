"""Recovery's end when the system is at rest with its work unfinished (``Quiescence``): the run
stops waiting only once nothing is owed and nothing moved for the workload's grace."""

from __future__ import annotations

from typing import Any

from chaos.core.capabilities import OptionValues, Quiescence
from chaos.core.spec import TestSpec
from chaos.orchestrator.run import _Rest

SPEC = TestSpec(workload="fake", seed=1)


class _Still:
    """A workload whose ``at_rest`` answers are scripted, one per poll."""

    name = "fake"

    def __init__(self, marks: list[object | None], grace: float = 2.0) -> None:
        self.marks = list(marks)
        self.grace = grace

    def at_rest(self, ctx: Any) -> object | None:
        return self.marks.pop(0)

    def rest_grace(self, values: OptionValues) -> float:
        return self.grace


def _polls(rest: _Rest, n: int, *, step: float = 0.5, quiet_since: float = 0.0) -> list[bool]:
    return [rest.still(None, i * step, quiet_since) for i in range(n)]  # type: ignore[arg-type]


def test_a_mark_unchanged_for_the_grace_ends_the_wait() -> None:
    wl = _Still([(7, 3)] * 6)
    assert isinstance(wl, Quiescence)
    rest = _Rest(wl, SPEC)  # type: ignore[arg-type]
    # first seen at 0.0: still at 2.0 s and after, not before
    assert _polls(rest, 6) == [False, False, False, False, True, True]
    assert rest.held(2.0) == 2.0


def test_anything_owed_or_any_change_starts_the_grace_again() -> None:
    owed = _Rest(_Still([None] * 8), SPEC)  # type: ignore[arg-type]
    assert not any(_polls(owed, 8)), "a message still in the broker: never at rest"
    moving = _Rest(_Still([(1,), (1,), (1,), (2,), (2,), (2,), (2,), (2,)]), SPEC)  # type: ignore[arg-type]
    # the write at 1.5 s starts it over: at rest from 1.5 + 2.0 = 3.5 s
    assert _polls(moving, 8) == [False] * 7 + [True]
    gap = _Rest(_Still([(1,), None, (1,), (1,), (1,), (1,), (1,), (1,)]), SPEC)  # type: ignore[arg-type]
    assert _polls(gap, 8) == [False] * 6 + [True, True], "owed in between: counted from 1.0 s"


def test_events_after_the_mark_hold_the_wait_open() -> None:
    # a service still writing events (a worker computing) keeps the run waiting
    rest = _Rest(_Still([(1,)] * 8), SPEC)  # type: ignore[arg-type]
    assert _polls(rest, 8, quiet_since=2.0) == [False] * 8
    rest = _Rest(_Still([(1,)] * 10), SPEC)  # type: ignore[arg-type]
    assert _polls(rest, 10, quiet_since=2.0) == [False] * 8 + [True, True]


def test_a_workload_that_cannot_tell_waits_for_the_timeout() -> None:
    class Plain:
        name = "plain"

    rest = _Rest(Plain(), SPEC)  # type: ignore[arg-type]
    assert not any(_polls(rest, 20))
