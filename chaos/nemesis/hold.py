"""``hold``: a write or read trigger's fault that is only the etcd proxy's hold — a slow call, no
signal to the process (``hold worker before read of counter for 2.5s``).

A held read has done its work once its answer is stale; stopping the process as well only runs it
into the client's own deadline (3 s in the labs) and turns the stale answer into a timeout. The
process goes on running, its call waiting at the proxy (chaos.nemesis.writepoint), and sees a slow
call. Anywhere else there is nothing to hold, and the fault says so before the run starts.
"""

from __future__ import annotations

from typing import Any

from chaos.core.context import RunContext
from chaos.core.target import Resolved
from chaos.nemesis.targets import TargetedFault


class HoldFault(TargetedFault):
    """Records the held call's process in the ledger; undo has nothing to undo (the proxy lets
    the call go when the write trigger releases it)."""

    name = "hold"

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        if not trigger or trigger.get("decided_by") not in ("etcd-proxy", "nats-proxy"):
            raise RuntimeError(
                f"hold {resolved.spec}: a hold is a write or read trigger's fault "
                "('hold worker before read of counter for 2s'); there is no call to hold here"
            )
        held = [t.to_json() for t in resolved.targets]
        where = f"at the {trigger['decided_by']}"
        return ctx.faults.start(
            "hold",
            lambda: [{**t, "held": where} for t in held],
            lambda: {"released": True},
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
        )
