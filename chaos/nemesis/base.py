"""The Nemesis contract and the target record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from chaos.orchestrator.context import RunContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A process on a node (``process`` None: the whole node)."""

    node: str
    process: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "process": self.process}


class Nemesis(Protocol):
    """Injects faults on a schedule and heals them.

    - ``run`` executes the schedule in the caller's thread until it is done or ``ctx.stop`` is set;
      every fault goes through ``ctx.faults`` (the ledger) so that it is recorded and can be healed.
    - ``run`` must heal each fault it started when its duration ends; the orchestrator's final
      ``ctx.faults.heal_all()`` is the safety net, not the plan.
    - A nemesis must never leave the cluster in a state that ``heal_all`` cannot undo.
    """

    name: str

    def run(self, ctx: RunContext) -> None: ...
