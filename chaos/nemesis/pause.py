"""``pause``: SIGSTOP processes, then SIGCONT them — what a long GC pause looks like.

This stops single processes, not the container (that is ``freeze``, the cgroup freezer). Signals
go from the host's PID namespace to the application's own process, never to the container's PID 1
(which ignores signals it has no handler for). A paused process keeps its sockets: its peers see a
hang, not a refusal; when it resumes, its timers fire at once, which is exactly the stale-holder
case the labs are about.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

from chaos.cluster.base import Freezable
from chaos.cluster.node_kit.undo import UndoOp
from chaos.core.context import RunContext
from chaos.core.target import Resolved, Target
from chaos.histories.ops import ABSTAINED, NEMESIS, OpType
from chaos.nemesis.targets import TargetedFault, processes_of, reap_handle

Picker = Callable[["RunContext"], Target | None]


# how long a signalled process may take to show its new state: a poll, so only a slow one waits;
# on a loaded machine a node capped at one CPU took over the 1 s this once was
STATE_WAIT = 5.0


def _wait_state(
    ctx: RunContext, t: Target, want: Callable[[str | None], bool], timeout: float
) -> str | None:
    deadline = time.monotonic() + timeout
    state = ctx.cluster.process_state(t.node, t.process or "")
    while not want(state) and time.monotonic() < deadline:
        time.sleep(0.005)
        state = ctx.cluster.process_state(t.node, t.process or "")
    return state


class PauseFault(TargetedFault):
    """SIGSTOP every target process; the undo sends SIGCONT and checks each left state T."""

    name = "pause"

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        procs = processes_of(ctx, resolved.targets)
        if not procs:
            raise RuntimeError(f"pause {resolved.spec}: no process to pause")
        # written down before any signal: a dead orchestrator's leftovers are resumed from this
        reap = [
            {"op": UndoOp.SIGCONT, "token": tok, "node": t.node, "process": t.process}
            for t in procs
            if (tok := reap_handle(ctx, t)) is not None
        ]

        return ctx.faults.start(
            "pause",
            lambda: _stop(ctx, procs, resolved.spec),
            lambda: _resume(ctx, procs),
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
            extra={"reap": reap},
        )


def _stop(ctx: RunContext, procs: list[Target], spec: str) -> list[dict[str, Any]]:
    """SIGSTOP each process and see it stopped (state T); the ones not running are skipped."""
    done = []
    for t in procs:
        pid = ctx.cluster.signal(t.node, t.process or "", signal.SIGSTOP)
        if pid is None:
            continue  # not running right now (killed, restarting): nothing to stop
        if _frozen(ctx, t.node):
            # a frozen node's processes take no signal until the thaw: the SIGSTOP waits in the
            # process (the kernel's pending set) and stops it the instant the node thaws, so
            # the pause holds from here on; its heal's SIGCONT cancels it if the node is still
            # frozen then. Reached when a late step lands inside another's freeze.
            done.append({**t.to_json(), "pid": pid, "signal": "SIGSTOP", "state": "frozen",
                         "pending": True})  # fmt: skip
            continue
        state = _wait_state(ctx, t, lambda s: s == "T", STATE_WAIT)
        if state != "T":
            raise RuntimeError(f"{t.process} on {t.node} (pid {pid}) is in state {state}, not T")
        done.append({**t.to_json(), "pid": pid, "signal": "SIGSTOP", "state": state})
    if not done:
        raise RuntimeError(f"pause {spec}: none of the target processes is running")
    return done


def _frozen(ctx: RunContext, node: str) -> bool:
    """Whether the node's freezer holds it (``freeze``): its processes are in state D, a
    signal sent to them pending until the thaw."""
    return isinstance(ctx.cluster, Freezable) and ctx.cluster.freezer_state(node) in (
        "FROZEN",
        "FREEZING",
    )


def _resume(ctx: RunContext, procs: list[Target]) -> list[dict[str, Any]]:
    """SIGCONT each process and see it running again."""
    out = []
    for t in procs:
        # the instant the process may run again, taken right before the signal: the
        # heal op is recorded only after the state check, and a resumed process can
        # write in between (checkers end the pause here, chaos.checkers.faults)
        resumed_at = round(ctx.now(), 6)
        pid = ctx.cluster.signal(t.node, t.process or "", signal.SIGCONT)
        if pid is None:
            continue
        state = _wait_state(ctx, t, lambda s: s != "T", STATE_WAIT)
        if state == "T":
            raise RuntimeError(f"{t.process} on {t.node} (pid {pid}) still stopped")
        out.append(
            {
                **t.to_json(),
                "pid": pid,
                "signal": "SIGCONT",
                "state": state,
                "resumed_at": resumed_at,
            }
        )
    return out


def pause(
    ctx: RunContext, t: Target, duration: float, trigger: dict[str, Any] | None = None
) -> None:
    """Pause ``t`` for ``duration`` seconds (or until the run stops), then resume it."""
    fid = PauseFault().start(
        ctx,
        Resolved(spec=f"{t.process}@{t.node}", targets=(t,)),
        intent={**t.to_json(), "duration": duration},
        trigger=trigger,
    )
    ctx.progress(f"paused {t.process} on {t.node} (SIGSTOP) for {duration:.1f} s")
    ctx.stop.wait(duration)
    ctx.faults.heal(fid)
    ctx.progress(f"resumed {t.process} on {t.node} (SIGCONT)")


class PauseNemesis:
    """Pauses a target chosen by ``pick`` (the workload's busiest process by default).

    This is the labs' own pause (``--nemesis pause`` alone, no target): the target is whoever is
    doing the interesting thing right now (lab3: the worker computing on an unacked delivery), so it
    depends on timing. With ``once`` it pauses a single time (the standard lab scenario); otherwise
    it pauses every ``interval`` seconds (jittered by the seeded rng) until the run stops.
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
        first, paused = True, 0
        try:
            while not ctx.stop.is_set():
                if not first or not self.once:
                    delay = self.interval * (0.5 + rng.random()) if not first else 1.0
                    if ctx.stop.wait(delay):
                        return
                first = False
                target = self._aim(ctx)
                if target is None:
                    ctx.progress("pause: no target became available")
                    if self.once:
                        return
                    continue
                pause(ctx, target, self.duration)
                paused += 1
                if self.once:
                    return
        finally:
            if not paused:
                abstain(ctx, "pause", f"no process was doing what the pause aims at (the "
                        f"workload's busiest process) within {self.wait_for_target:g} s")  # fmt: skip

    def _aim(self, ctx: RunContext) -> Target | None:
        """The workload's aim, or None after ``wait_for_target``: never a random process instead
        (a solution that hides what the aim looks for would turn the pause onto a process where
        it proves nothing, and the run would pass as tested)."""
        deadline = time.monotonic() + self.wait_for_target
        while time.monotonic() < deadline and not ctx.stop.is_set():
            ctx.events.poll()
            target = self.pick(ctx)
            if target is not None:
                return target
            time.sleep(0.01)
        return None


def abstain(ctx: RunContext, fault: str, why: str) -> None:
    """Record that an aimed fault never found its aim: an ``info`` nemesis op whose ``extra``
    says so, which makes the run ``unknown`` (chaos.checkers.completeness)."""
    ctx.history.record(
        process=NEMESIS, type=OpType.INFO, f=fault, value={ABSTAINED: why}, extra={ABSTAINED: why}
    )
