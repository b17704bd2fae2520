"""The Nemesis and Fault contracts, and the optional capability of a fault to take a custom grudge."""

from __future__ import annotations

import random
import threading
from typing import Any, Protocol, runtime_checkable

from chaos.core.context import RunContext
from chaos.core.target import Resolved


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

    def resolve(self, ctx: RunContext, spec: str | None, rng: random.Random) -> Resolved: ...

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
class ArmsFirst(Protocol):
    """A nemesis that arms a point of the system when it starts (a fault point, a trigger's hold).

    ``armed`` is set once the first arming is written (or the nemesis gave up); the orchestrator
    starts the workload's client only then, so that the very first operations (lab3's creates)
    can reach the point instead of racing past it."""

    armed: threading.Event


@runtime_checkable
class CustomGrudge(Protocol):
    """Optional fault capability: apply a grudge given as data (a schedule file's ``grudge:``),
    ``{receiver: [senders it drops]}`` or ``[[component], ...]``, instead of a target spec."""

    def custom(self, ctx: RunContext, grudge: object) -> Resolved: ...
