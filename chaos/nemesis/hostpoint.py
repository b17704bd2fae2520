"""A fault point the host fires (``HostFaultPoints``): armed on every node, confirmed by what the
orchestrator's own processes observed — lab3's ``txn-error-*``, fired by the nodes' root-owned
etcd proxies, never claimed by the code under test."""

from __future__ import annotations

from typing import Any

from chaos.core.capabilities import HostFaultPoints
from chaos.core.context import RunContext

POLL = 0.1


class HostArming:
    """The :class:`~chaos.nemesis.faultpoint.Arming` of a point the workload's ``host`` arms
    and sees fire; the fault is the proxy's own (an error answer), nothing is left to act."""

    where = "every node"

    def __init__(self, host: HostFaultPoints) -> None:
        self.host = host
        self.gen = ""

    def arm(self, ctx: RunContext, point: str) -> None:
        self.gen = self.host.arm_host_point(ctx, point)

    def disarm(self, ctx: RunContext, point: str) -> None:
        self.host.disarm_host_point(ctx, point)

    def fired(
        self, ctx: RunContext, point: str, component: str, wait: float
    ) -> dict[str, Any] | None:
        found: list[dict[str, Any]] = []
        deadline = ctx.now() + wait
        while not found and ctx.now() < deadline and not ctx.stop.is_set():
            found = self.host.host_point_fired(ctx, point, self.gen)
            if not found:
                ctx.stop.wait(POLL)
        self.host.disarm_host_point(ctx, point)
        # a proxy may fire between the last look and the disarm: count what fired by then
        found = found or self.host.host_point_fired(ctx, point, self.gen)
        if not found:
            return None
        first = min(found, key=lambda f: f.get("time") or 0.0)
        return {
            "node": first["node"],
            "process": component,
            "pid": None,
            "task_id": None,
            "fired_at": first.get("time"),
            "fired_by": "host",
            "firings": found,
        }

    def act(self, ctx: RunContext, point: str, fired: dict[str, Any]) -> None:
        ctx.progress(f"{point} fired on {fired['node']} (the node's etcd proxy)")
