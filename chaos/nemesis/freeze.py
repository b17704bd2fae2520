"""``freeze``: a whole node stopped through the cgroup freezer (``docker pause``), then thawed.

Unlike ``pause`` (SIGSTOP of one process, which the process's own children and threads outside it
do not share), the freezer stops every task of the container at once, the way a VM that is
suspended or a host swapping to death looks from outside. Its processes do not see a signal; they
sit in uninterruptible sleep (state D on cgroup v1) until thawed. Needs the backend's optional
``Freezable`` capability.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from chaos.cluster.base import Freezable
from chaos.nemesis.base import Resolved
from chaos.nemesis.targets import TargetedFault

if TYPE_CHECKING:
    from chaos.orchestrator.context import RunContext


def _wait_freezer(cluster: Any, node: str, want: str, timeout: float = 5.0) -> str | None:
    reader = getattr(cluster, "freezer_state", None)
    if reader is None:
        return None
    deadline = time.monotonic() + timeout
    state = reader(node)
    while state != want and time.monotonic() < deadline:
        time.sleep(0.01)
        state = reader(node)
    return None if state is None else str(state)


class FreezeFault(TargetedFault):
    """Freeze the nodes a target spec names (a process target freezes its node)."""

    name = "freeze"

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        cluster = ctx.cluster
        if not isinstance(cluster, Freezable):
            raise RuntimeError("freeze: this cluster backend cannot freeze a node")
        nodes = sorted({t.node for t in resolved.targets})
        if not nodes:
            raise RuntimeError(f"freeze {resolved.spec}: no node to freeze")
        names = getattr(cluster, "container_name", None)
        reap = [{"op": "thaw", "node": n, "container": names(n) if names else None} for n in nodes]

        def apply() -> list[dict[str, Any]]:
            out = []
            for n in nodes:
                cluster.freeze(n)
                state = _wait_freezer(cluster, n, "FROZEN")
                if state not in ("FROZEN", None):
                    raise RuntimeError(f"{n}: the freezer reports {state}, not FROZEN")
                procs = {
                    p.name: ctx.cluster.process_state(n, p.name)
                    for p in ctx.supervisor.processes()
                    if p.node == n
                }
                out.append({"node": n, "process": None, "freezer": state, "states": procs})
            return out

        def undo() -> list[dict[str, Any]]:
            out = []
            for n in nodes:
                cluster.thaw(n)
                state = _wait_freezer(cluster, n, "THAWED")
                if state not in ("THAWED", None):
                    raise RuntimeError(f"{n}: the freezer reports {state} after thaw")
                out.append({"node": n, "process": None, "freezer": state})
            return out

        return ctx.faults.start(
            "freeze",
            apply,
            undo,
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
            extra={"reap": reap},
        )
