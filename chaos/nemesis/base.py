"""The Nemesis and Fault contracts, the target record, and the role capability of workloads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from chaos.orchestrator.context import RunContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A process on a node; ``process`` None means the node's whole system (every process it runs)."""

    node: str
    process: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "process": self.process}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """What a target spec resolved to at the moment a fault starts.

    ``targets`` for process and node faults; ``grudge`` (receiver -> senders it drops) for
    partitions. ``spec`` is what was asked for (``worker``, ``halves``, ``n1+n2``...).
    """

    spec: str
    targets: tuple[Target, ...] = ()
    grudge: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.spec}
        if self.targets:
            d["targets"] = [t.to_json() for t in self.targets]
        if self.grudge:
            d["grudge"] = self.grudge
        return d


class Fault(Protocol):
    """One kind of fault (``pause``, ``freeze``, ``kill``, ``partition``).

    - ``resolve`` turns a target spec (None: the fault's default) into concrete targets, drawing
      any random choice from ``rng`` only, so that a seed replays it; it must not change the system.
    - ``start`` applies the fault through ``ctx.faults`` (the ledger) and returns the fault id. It
      must register its undo with the ledger *before* touching the system (so an orchestrator that
      dies mid-way leaves a record ``chaos cleanup`` can heal from), must verify that the fault took
      effect (a process in state T, a container frozen, a cut that probes confirm) and must record
      what it resolved to (node, process, pid, grudge) in the op's value.
    - The undo given to the ledger must be idempotent and must verify the heal.
    - A fault must never touch anything outside the run's own cluster.
    """

    name: str

    def resolve(self, ctx: RunContext, spec: str | None, rng: Any) -> Resolved: ...

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int: ...


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


@runtime_checkable
class RoleResolver(Protocol):
    """Optional workload capability: name the processes that play a role right now.

    ``resolve_role(ctx, "holder")`` returns the targets that currently play the role (an empty list
    when nobody does at the moment), or None when the workload does not know the role, so that the
    built-in roles (components, ``leader``, ``broker``, ``primaries``) still apply; for those, an
    empty list also counts as "not mine". It must only read the system's state (events, the
    store), never change it.
    """

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None: ...
