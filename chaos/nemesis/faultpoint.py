"""Lab fault points: a one-shot fault the service fires at an exact place of its protocol.

The orchestrator arms the point by writing a file in the control folder (shared by every node, so
whichever process reaches the point first claims it). A crashing point kills the process; the
supervisor restarts it, which is the heal.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from chaos.core.context import RunContext


class FaultPointNemesis:
    def __init__(
        self,
        point: str,
        *,
        component: str,
        crashes: bool,
        wait: float = 30.0,
        observe: Callable[[RunContext], dict[str, Any]] | None = None,
    ) -> None:
        self.observe = observe
        self.name = point
        self.point = point
        self.component = component
        self.crashes = crashes
        self.wait = wait
        self.armed = threading.Event()  # ArmsFirst: the client starts once the point is armed

    def run(self, ctx: RunContext) -> None:
        try:
            self._run(ctx)
        finally:
            self.armed.set()  # never keep the client waiting on a nemesis that failed

    def _run(self, ctx: RunContext) -> None:
        fired: dict[str, Any] = {}
        gen = secrets.token_hex(6)

        def apply() -> list[dict[str, Any]]:
            ctx.write_control(self.point, json.dumps({"armed_at": ctx.now(), "gen": gen}))
            return [{"point": self.point, "component": self.component, "armed": "any node"}]

        def undo() -> dict[str, Any]:
            ctx.remove_control(self.point)  # not fired yet: disarm
            return {"point": self.point, **fired}

        fid = ctx.faults.start(self.point, apply, undo, intent={"point": self.point})
        self.armed.set()
        ctx.progress(f"armed fault point {self.point}")
        ev = ctx.events.wait_for(
            # the service's event, confirmed by the claim it made with O_EXCL for this arming
            lambda e: (
                e.kind == "fault-point"
                and e.data.get("point") == self.point
                and ctx.claimed(self.point, gen)
            ),
            self.wait,
            ctx.stop,
        )
        ctx.remove_control(self.point)  # one-shot: whoever claimed it, no one else can
        if ev is None:
            ctx.progress(f"fault point {self.point} never fired")
            ctx.faults.heal(fid)
            return
        fired.update(
            {
                "node": ev.node,
                "process": ev.component,
                "pid": ev.pid,
                "task_id": ev.task_id,
                "fired_at": round(ev.time, 3),
            }
        )
        if self.observe is not None:
            # evidence of the state the fault left, taken before anything recovers it
            try:
                fired["at_fire"] = self.observe(ctx)
            except Exception as e:
                fired["at_fire"] = {"error": f"{type(e).__name__}: {e}"}
        ctx.progress(f"{self.point} fired on {ev.node} ({ev.component}, task {ev.task_id})")
        if self.crashes:
            # the heal is the restart: wait until the supervisor has the process running again
            deadline = time.monotonic() + self.wait
            while time.monotonic() < deadline and not ctx.stop.is_set():
                pid = ctx.cluster.pid(ev.node, ev.component)
                if pid is not None and pid != ev.pid:
                    fired["restarted_pid"] = pid
                    break
                time.sleep(0.05)
        ctx.faults.heal(fid)
