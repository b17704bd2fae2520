"""``freeze``: a whole node stopped through the cgroup freezer (``docker pause``), then thawed.

Unlike ``pause`` (SIGSTOP of one process, which the process's own children and threads outside it
do not share), the freezer stops every task of the container at once, the way a VM that is
suspended or a host swapping to death looks from outside. Its processes do not see a signal; they
sit in uninterruptible sleep (state D on cgroup v1) until thawed. Needs the backend's optional
``Freezable`` capability.
"""

from __future__ import annotations

import time
from typing import Any

from chaos.cluster.base import Freezable, Reapable
from chaos.cluster.node_kit.undo import UndoOp
from chaos.core.context import RunContext
from chaos.core.target import Resolved
from chaos.nemesis.targets import TargetedFault


def _wait_freezer(cluster: Freezable, node: str, want: str, timeout: float = 5.0) -> str | None:
    deadline = time.monotonic() + timeout
    state = cluster.freezer_state(node)
    while state not in (want, None) and time.monotonic() < deadline:
        time.sleep(0.01)
        state = cluster.freezer_state(node)
    return state


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
        handles = cluster if isinstance(cluster, Reapable) else None
        reap = [
            {"op": UndoOp.THAW, "node": n, "container": handles.reap_handle(n) if handles else None}
            for n in nodes
        ]

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
                resumed_at = round(ctx.now(), 6)  # right before the thaw (see pause)
                cluster.thaw(n)
                state = _wait_freezer(cluster, n, "THAWED")
                if state not in ("THAWED", None):
                    raise RuntimeError(f"{n}: the freezer reports {state} after thaw")
                out.append({"node": n, "process": None, "freezer": state, "resumed_at": resumed_at})
            return out

        return ctx.faults.start(
            "freeze",
            apply,
            undo,
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
            extra={"reap": reap},
        )
