"""``pause``: SIGSTOP one process, then SIGCONT it — what a long GC pause looks like.

This stops a single process, not the container (that is ``freeze``, the cgroup freezer). A paused
process keeps its sockets: its peers see a hang, not a refusal; when it resumes, its timers fire at
once, which is exactly the stale-holder case the labs are about.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

from chaos.nemesis.base import Target
from chaos.orchestrator.context import RunContext

Picker = Callable[[RunContext], Target | None]


def _wait_state(
    ctx: RunContext, t: Target, want: Callable[[str | None], bool], timeout: float
) -> str | None:
    deadline = time.monotonic() + timeout
    state = ctx.cluster.process_state(t.node, t.process or "")
    while not want(state) and time.monotonic() < deadline:
        time.sleep(0.005)
        state = ctx.cluster.process_state(t.node, t.process or "")
    return state


def pause(
    ctx: RunContext, t: Target, duration: float, trigger: dict[str, Any] | None = None
) -> None:
    """Pause ``t`` for ``duration`` seconds (or until the run stops), then resume it."""
    name = t.process or ""

    def apply() -> list[dict[str, Any]]:
        pid = ctx.cluster.signal(t.node, name, signal.SIGSTOP)
        if pid is None:
            raise RuntimeError(f"{name} on {t.node} is not running")
        state = _wait_state(ctx, t, lambda s: s == "T", 1.0)
        return [
            {**t.to_json(), "pid": pid, "signal": "SIGSTOP", "state": state, "duration": duration}
        ]

    def undo() -> dict[str, Any]:
        pid = ctx.cluster.signal(t.node, name, signal.SIGCONT)
        state = _wait_state(ctx, t, lambda s: s != "T", 1.0)
        return {**t.to_json(), "pid": pid, "signal": "SIGCONT", "state": state}

    fid = ctx.faults.start(
        "pause", apply, undo, intent={**t.to_json(), "duration": duration}, trigger=trigger
    )
    ctx.progress(f"paused {name} on {t.node} (SIGSTOP) for {duration:.1f} s")
    ctx.stop.wait(duration)
    ctx.faults.heal(fid)
    ctx.progress(f"resumed {name} on {t.node} (SIGCONT)")


class PauseNemesis:
    """Pauses a target chosen by ``pick`` (the workload's busiest process by default).

    With ``once`` it pauses a single time (the standard lab scenario); otherwise it pauses every
    ``interval`` seconds (jittered by the seeded rng) until the run stops.
    """

    name = "pause"

    def __init__(
        self,
        pick: Picker,
        *,
        duration: float,
        interval: float,
        once: bool,
        wait_for_target: float = 20.0,
    ) -> None:
        self.pick = pick
        self.duration = duration
        self.interval = interval
        self.once = once
        self.wait_for_target = wait_for_target

    def run(self, ctx: RunContext) -> None:
        rng = ctx.rng_for("nemesis-pause")
        first = True
        while not ctx.stop.is_set():
            if not first or not self.once:
                delay = self.interval * (0.5 + rng.random()) if not first else 1.0
                if ctx.stop.wait(delay):
                    return
            first = False
            deadline = time.monotonic() + self.wait_for_target
            target = None
            while target is None and time.monotonic() < deadline and not ctx.stop.is_set():
                ctx.events.poll()
                target = self.pick(ctx)
                if target is None:
                    time.sleep(0.01)
            if target is None:
                ctx.progress("pause: no target became available")
                if self.once:
                    return
                continue
            pause(ctx, target, self.duration)
            if self.once:
                return
