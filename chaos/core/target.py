"""Who a fault hits: a process on a node, or a node's whole system; and what a spec resolved to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class RoleUnplayed(LookupError):
    """A fault aimed at a role (``standby``, ``holder``) that nobody plays at this moment.

    A scheduled step that meets it waits a while for someone to play the role (see
    ``chaos.nemesis.runner``) instead of being skipped: a role is whoever plays it when the fault
    starts, and early in a run nobody may play it yet."""


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
    partitions. ``spec`` is what was asked for (``worker``, ``halves``, ``n1+n2``...). ``params``
    holds what a fault drew besides its targets (a clock's mode and offsets, a loss probability),
    so that the seed replays those too.
    """

    spec: str
    targets: tuple[Target, ...] = ()
    grudge: dict[str, list[str]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.spec}
        if self.targets:
            d["targets"] = [t.to_json() for t in self.targets]
        if self.grudge:
            d["grudge"] = self.grudge
        if self.params:
            d["params"] = self.params
        return d
