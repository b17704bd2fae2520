"""Recovery's end when the system is at rest with its work unfinished (``Quiescence``): the run
stops waiting only once nothing is owed and nothing moved for the workload's grace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.core.capabilities import OptionValues, Quiescence
from chaos.core.rest import RestWatch
from chaos.core.spec import TestSpec
from chaos.orchestrator import run as run_module

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


def _polls(rest: RestWatch, n: int, *, step: float = 0.5, quiet_since: float = 0.0) -> list[bool]:
    return [rest.still(None, i * step, quiet_since) for i in range(n)]  # type: ignore[arg-type]


def test_a_mark_unchanged_for_the_grace_ends_the_wait() -> None:
    wl = _Still([(7, 3)] * 6)
    assert isinstance(wl, Quiescence)
    rest = RestWatch(wl, SPEC)  # type: ignore[arg-type]
    # first seen at 0.0: still at 2.0 s and after, not before
    assert _polls(rest, 6) == [False, False, False, False, True, True]
    assert rest.held(2.0) == 2.0


def test_anything_owed_or_any_change_starts_the_grace_again() -> None:
    owed = RestWatch(_Still([None] * 8), SPEC)  # type: ignore[arg-type]
    assert not any(_polls(owed, 8)), "a message still in the broker: never at rest"
    moving = RestWatch(_Still([(1,), (1,), (1,), (2,), (2,), (2,), (2,), (2,)]), SPEC)  # type: ignore[arg-type]
    # the write at 1.5 s starts it over: at rest from 1.5 + 2.0 = 3.5 s
    assert _polls(moving, 8) == [False] * 7 + [True]
    gap = RestWatch(_Still([(1,), None, (1,), (1,), (1,), (1,), (1,), (1,)]), SPEC)  # type: ignore[arg-type]
    assert _polls(gap, 8) == [False] * 6 + [True, True], "owed in between: counted from 1.0 s"


def test_events_after_the_mark_hold_the_wait_open() -> None:
    # a service still writing events (a worker computing) keeps the run waiting
    rest = RestWatch(_Still([(1,)] * 8), SPEC)  # type: ignore[arg-type]
    assert _polls(rest, 8, quiet_since=2.0) == [False] * 8
    rest = RestWatch(_Still([(1,)] * 10), SPEC)  # type: ignore[arg-type]
    assert _polls(rest, 10, quiet_since=2.0) == [False] * 8 + [True, True]


def test_a_workload_that_cannot_tell_waits_for_the_timeout() -> None:
    class Plain:
        name = "plain"

    rest = RestWatch(Plain(), SPEC)  # type: ignore[arg-type]
    assert not any(_polls(rest, 20))


def test_at_rest_is_asked_at_most_twice_a_second() -> None:
    wl = _Still([(1,)] * 100)
    rest = RestWatch(wl, SPEC)  # type: ignore[arg-type]
    _polls(rest, 30, step=0.1)  # three seconds of recovery's 0.1 s polls
    assert 100 - len(wl.marks) == 6


class _Flaky:
    """A workload whose final reads fail ``fails`` times, then answer."""

    name = "fake"

    def __init__(self, fails: int) -> None:
        self.fails, self.calls = fails, 0

    def final_state(self, ctx: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.fails:
            raise TimeoutError("etcd connection timeout")
        return {"counter": 10}


def test_final_reads_are_tried_three_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "FINAL_READ_PAUSE", 0.0)
    said: list[str] = []
    ok = _Flaky(2)
    run = run_module._Run(SPEC, ok, store=tmp_path, progress=said.append)  # type: ignore[arg-type]
    assert run._final_state(None) == {"counter": 10}  # type: ignore[arg-type]
    assert ok.calls == 3 and sum("trying again" in s for s in said) == 2
    down = _Flaky(3)
    run = run_module._Run(SPEC, down, store=tmp_path, progress=said.append)  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        run._final_state(None)  # type: ignore[arg-type]
    assert down.calls == 3
