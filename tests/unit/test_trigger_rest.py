"""A trigger that fires ``N times`` stops awaiting a later firing once the system is at rest
(``Quiescence``): nothing left in it can reach the point again. ack-before-commit's first kill
loses its task, so the second was awaited for the whole time limit (32 s for a verdict known at
4 s). The first firing is awaited the whole time, at rest or not: before the client's first
request the system is at rest too."""

from __future__ import annotations

import time
from pathlib import Path

from chaos.core.capabilities import OptionValues
from chaos.core.context import RunContext
from chaos.core.rest import RestWatch
from chaos.core.spec import TestSpec
from chaos.histories.jsonl import read_history
from chaos.nemesis.kill import KillFault
from chaos.nemesis.trigger import TriggerNemesis, bind, parse_trigger
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_fault_confirmation import _ctx, hold_reached

SPEC = TestSpec(workload="fake", seed=1)
# the time limit a later firing would otherwise be awaited for: long enough that the grace and a
# few polls fit well under it on a loaded machine (at 4 s, one suite run beside the integration
# stream took 6.2 s to see the rest)
WAIT = 8.0
REST_WAIT = 60.0


class _System:
    """A system whose ``at_rest`` says ``mark`` every time (None: something is still owed)."""

    name = "fake"

    def __init__(self, mark: object | None, grace: float = 0.5) -> None:
        self.mark, self.grace, self.asked = mark, grace, 0

    def at_rest(self, ctx: object) -> object | None:
        self.asked += 1
        return self.mark

    def rest_grace(self, values: OptionValues) -> float:
        return self.grace


def _trigger(
    ctx: RunContext, phrase: str, system: _System | None, wait: float = WAIT
) -> tuple[float, int, list[str]]:
    """Run the trigger; (seconds it took, kills applied, what it said)."""
    tr = bind(parse_trigger(phrase), Lab3(), "lab3")
    assert tr.point is not None
    said: list[str] = []
    ctx.progress = said.append  # type: ignore[method-assign]
    reacher = hold_reached(ctx, tr.point.file, ctx.cluster.pid("n1", "worker"))
    rest = None if system is None else (lambda: RestWatch(system, SPEC))  # type: ignore[arg-type]
    t0 = time.monotonic()
    TriggerNemesis(tr, KillFault(), default_duration=0.1, wait=wait, rest=rest).run(ctx)
    took = time.monotonic() - t0
    reacher.join()
    ops = read_history(ctx.run_dir / "history.jsonl").records
    # a firing is two records: the fault's invoke and its completion
    kills = [o for o in ops if o.f == "kill" and o.extra.get("phase") == "start"]
    return took, len(kills) // 2, said


def test_a_later_firing_is_not_awaited_once_the_system_is_at_rest(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    system = _System((7, 3))
    # a wait far past what rest takes: rest ends it (what it says), not the time limit. The
    # grace is 0.5 s and a poll or two; beside the suite's integration stream the lookout's
    # thread once took 14.6 s to get there, so the limit is no bound on the time
    took, kills, said = _trigger(ctx, "kill worker on delivery 2 times", system, wait=REST_WAIT)
    assert kills == 1
    assert took < REST_WAIT - 1.5, took
    assert system.asked >= 2
    assert any("came to rest after 1 firing(s)" in s for s in said), said


def test_a_system_with_work_owed_keeps_the_later_firing_awaited(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    took, kills, said = _trigger(ctx, "kill worker on delivery 2 times", _System(None))
    assert kills == 1 and took >= WAIT, took
    assert any("was never reached" in s for s in said), said


def test_the_first_firing_is_awaited_the_whole_time_even_at_rest(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    tr = bind(parse_trigger("kill worker on delivery"), Lab3(), "lab3")
    system = _System((1,))
    t0 = time.monotonic()
    TriggerNemesis(
        tr,
        KillFault(),
        default_duration=0.1,
        wait=2.0,
        rest=lambda: RestWatch(system, SPEC),  # type: ignore[arg-type]
    ).run(ctx)
    assert time.monotonic() - t0 >= 2.0
    assert system.asked == 0, "the first firing never asks"
