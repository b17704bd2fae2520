"""Lab fault points: a one-shot fault at an exact place of the service's protocol.

One nemesis for every point; how the point is armed and how its firing is known is its
:class:`Arming`, chosen by the workload's declaration of the point (``FaultPoints``, and
``HostFaultPoints`` for the points the host fires):

- :class:`~chaos.nemesis.claimpoint.ClaimedArming`: the process that reaches the point claims it
  and waits for the orchestrator's answer; the host checks the claimer, grants it, and makes the
  crash itself when the point crashes;
- :class:`~chaos.nemesis.hostpoint.HostArming`: every node's root-owned etcd proxy is armed and
  fires the point itself; the code under test never claims anything.

Either way the point is written in the ledger before it is armed (the undo disarms it), the state
the point is reached in is read by the orchestrator (``observe``: etcd and the broker) before the
fault acts, and the heal's completion holds the facts of the firing. Whether they show the
scenario's precondition is the checkers' to judge.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from chaos.core.context import RunContext


class Arming(Protocol):
    """How one fault point is armed and fired; one arming per nemesis (it keeps the arming's
    generation between the calls)."""

    # where the point is armed, for the ledger's record: "any node", "every node"
    where: str

    def arm(self, ctx: RunContext, point: str) -> None: ...

    def disarm(self, ctx: RunContext, point: str) -> None:
        """Idempotent: the ledger's undo, also after the point fired."""

    def fired(
        self, ctx: RunContext, point: str, component: str, wait: float
    ) -> dict[str, Any] | None:
        """Wait (at most ``wait`` seconds, or until the run stops) for the point to fire; the
        facts of the firing for the heal's record (with ``refused``: a firing the host will not
        act on), or None when it never fired."""

    def act(self, ctx: RunContext, point: str, fired: dict[str, Any]) -> None:
        """The fault itself, once the state at the firing was observed (a grant, a crash), adding
        its facts to ``fired``; nothing for a point the host fired."""


class FaultPointNemesis:
    def __init__(
        self,
        point: str,
        *,
        component: str,
        arming: Arming,
        wait: float = 30.0,
        observe: Callable[[RunContext], dict[str, Any]] | None = None,
    ) -> None:
        self.name = point
        self.point = point
        self.component = component
        self.arming = arming
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
        where = self.arming.where

        def apply() -> list[dict[str, Any]]:
            self.arming.arm(ctx, self.point)
            return [{"point": self.point, "component": self.component, "armed": where}]

        def undo() -> dict[str, Any]:
            self.arming.disarm(ctx, self.point)
            return {"point": self.point, **fired}

        fid = ctx.faults.start(self.point, apply, undo, intent={"point": self.point})
        self.armed.set()
        ctx.progress(f"armed fault point {self.point} on {where}")
        try:
            got = self.arming.fired(ctx, self.point, self.component, self.wait)
            if got is None:
                ctx.progress(f"fault point {self.point} never fired")
                return
            fired.update(got)
            if "refused" in fired:
                return
            self._observe(ctx, fired)
            self.arming.act(ctx, self.point, fired)
        finally:
            ctx.faults.heal(fid)

    def _observe(self, ctx: RunContext, fired: dict[str, Any]) -> None:
        """The state the point was reached in, read by the orchestrator before the fault acts
        (a claimer waits for its answer meanwhile), into ``fired``."""
        if self.observe is None:
            return
        try:
            fired["at_fire"] = self.observe(ctx)
        except Exception as e:
            fired["at_fire"] = {"error": f"{type(e).__name__}: {e}"}
        # how long the reading took: a commit-first split read later than AckWait after the
        # claim may already be redelivered and ACKed elsewhere (then unknown, never valid)
        fired["observed_at"] = round(ctx.now(), 3)
