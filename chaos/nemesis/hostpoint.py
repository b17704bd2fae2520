"""Fault points the host fires (``HostFaultPoints``): armed on every node, confirmed by what the
orchestrator's own processes observed — lab3's ``txn-error-*``, fired by the nodes' root-owned
etcd proxies, never claimed by the code under test."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from chaos.core.capabilities import HostFaultPoints
from chaos.core.context import RunContext

POLL = 0.1


class HostFaultPointNemesis:
    def __init__(
        self,
        point: str,
        *,
        component: str,
        host: HostFaultPoints,
        wait: float = 30.0,
        observe: Callable[[RunContext], dict[str, Any]] | None = None,
    ) -> None:
        self.name = point
        self.point = point
        self.component = component
        self.host = host
        self.wait = wait
        self.observe = observe
        self.armed = threading.Event()  # ArmsFirst: the client starts once the point is armed

    def run(self, ctx: RunContext) -> None:
        try:
            self._run(ctx)
        finally:
            self.armed.set()  # never keep the client waiting on a nemesis that failed

    def _run(self, ctx: RunContext) -> None:
        fired: dict[str, Any] = {}
        gen: list[str] = []

        def apply() -> list[dict[str, Any]]:
            gen.append(self.host.arm_host_point(ctx, self.point))
            return [{"point": self.point, "component": self.component, "armed": "every node"}]

        def undo() -> dict[str, Any]:
            self.host.disarm_host_point(ctx, self.point)
            return {"point": self.point, **fired}

        fid = ctx.faults.start(self.point, apply, undo, intent={"point": self.point})
        self.armed.set()
        ctx.progress(f"armed fault point {self.point} on every node")
        found: list[dict[str, Any]] = []
        deadline = ctx.now() + self.wait
        while not found and ctx.now() < deadline and not ctx.stop.is_set():
            found = self.host.host_point_fired(ctx, self.point, gen[0])
            if not found:
                ctx.stop.wait(POLL)
        self.host.disarm_host_point(ctx, self.point)
        # a proxy may fire between the last look and the disarm: count what fired by then
        found = found or self.host.host_point_fired(ctx, self.point, gen[0])
        if not found:
            ctx.progress(f"fault point {self.point} never fired")
            ctx.faults.heal(fid)
            return
        first = min(found, key=lambda f: f.get("time") or 0.0)
        fired.update(
            {
                "node": first["node"],
                "process": self.component,
                "pid": None,
                "task_id": None,
                "fired_at": first.get("time"),
                "fired_by": "host",
                "firings": found,
            }
        )
        if self.observe is not None:
            try:
                fired["at_fire"] = self.observe(ctx)
            except Exception as e:
                fired["at_fire"] = {"error": f"{type(e).__name__}: {e}"}
        ctx.progress(f"{self.point} fired on {first['node']} (the node's etcd proxy)")
        ctx.faults.heal(fid)
