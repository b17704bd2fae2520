"""Runs a schedule of steps: each fault at its offset, healed when its duration ends.

Steps may overlap (a scripted timeline can pause a worker during a partition): each step runs in
its own thread from its start offset to its heal. Offsets count from the moment the nemesis starts,
which is when the workload starts.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from chaos.core.context import RunContext
from chaos.core.target import Resolved, RoleUnplayed
from chaos.nemesis.base import CustomGrudge, Fault
from chaos.nemesis.plan import Step

# how often a step aimed at a role nobody plays looks again, and the least it waits
ROLE_POLL = 0.1
ROLE_WAIT_MIN = 2.0


class ScheduleNemesis:
    name = "schedule"

    def __init__(self, steps: Sequence[Step], faults: Mapping[str, Fault]) -> None:
        unknown = sorted({s.fault for s in steps} - set(faults))
        if unknown:
            raise ValueError(f"no fault named {', '.join(unknown)}; faults: {', '.join(faults)}")
        self.steps = sorted(steps, key=lambda s: (s.at, s.index))
        self.faults = faults
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def run(self, ctx: RunContext) -> None:
        t0 = ctx.now()
        threads: list[threading.Thread] = []
        for step in self.steps:
            if ctx.stop.wait(max(0.0, t0 + step.at - ctx.now())):
                break
            th = threading.Thread(
                target=self._step, args=(ctx, step), name=f"nemesis-step-{step.index}", daemon=True
            )
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
        if self.errors:
            raise RuntimeError("; ".join(self.errors))

    @staticmethod
    def _resolve_when_played(
        ctx: RunContext, fault: Fault, step: Step, rng: random.Random
    ) -> Resolved:
        """Resolve the step's target; a role nobody plays yet (early in a run, before the first
        grant) is waited for, up to the step's duration, rather than the step being lost."""
        deadline = time.monotonic() + max(step.duration, ROLE_WAIT_MIN)
        while True:
            try:
                return fault.resolve(ctx, step.target, rng)
            except RoleUnplayed:
                if time.monotonic() >= deadline or ctx.stop.wait(ROLE_POLL):
                    raise

    def _step(self, ctx: RunContext, step: Step) -> None:
        fault = self.faults[step.fault]
        rng = ctx.rng_for(f"targets:{step.index}")
        try:
            if step.grudge is not None:
                if not isinstance(fault, CustomGrudge):
                    raise ValueError(f"{step.fault} takes no grudge")
                resolved = fault.custom(ctx, step.grudge)
            else:
                resolved = self._resolve_when_played(ctx, fault, step, rng)
            intent: dict[str, Any] = {
                "step": step.index,
                "at": step.at,
                "target": resolved.spec,
                "duration": step.duration,
            }
            if step.source != "seed":
                intent["source"] = step.source
            fid = fault.start(ctx, resolved, intent=intent)
        except Exception as e:
            if ctx.faults.closed:
                return  # the run ended while this step was getting ready: nothing was applied
            msg = f"step {step.index} ({step.fault} {step.target or ''} at {step.at:g}s): {e}"
            ctx.progress(f"nemesis {msg}")
            with self._lock:
                self.errors.append(msg)
            return
        what = resolved.spec + (f" {resolved.grudge}" if resolved.grudge else "")
        ctx.progress(f"{step.fault} {what} for {step.duration:g} s")
        ctx.stop.wait(step.duration)
        ctx.faults.heal(fid)
        ctx.progress(f"healed {step.fault} {resolved.spec}")
