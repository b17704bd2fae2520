"""Target specs: which nodes or processes a fault hits.

Grammar (one string; the CLI writes node lists with ``+`` because ``,`` separates faults)::

    node selector   one | minority | majority | minority-third | all | primaries | n1 | n1+n2
    role            worker | relay | api | etcd | nats | orders ... (any supervised component)
                    leader (the etcd leader's etcd) | broker (the JetStream server)
                    holder ... (roles a workload resolves: ``resolve_role``)
    role@selector   worker@all, etcd@majority, worker@n2 — the role's processes on those nodes

A bare node selector means the node's whole system (every process the run supervises there; for
``freeze`` and ``partition``, the node itself). A bare component role means one of its processes,
drawn from the seeded stream; ``leader``, ``broker`` and workload roles mean whoever plays the role
at the moment the fault starts, which depends on the run's timing, not only on the seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chaos.nemesis.base import Resolved, RoleResolver, Target
from chaos.nemesis.grudge import majority, minority_third

if TYPE_CHECKING:
    from chaos.orchestrator.context import RunContext

NODE_SELECTORS = ("one", "minority", "majority", "minority-third", "all", "primaries")
BUILTIN_ROLES = ("leader", "broker")


class TargetError(ValueError):
    """A target spec that does not parse or names nothing in this cluster."""


def split_spec(spec: str) -> tuple[str | None, str | None]:
    """``role@selector`` -> (role, selector); a bare word is a selector if it is one, else a role."""
    spec = spec.strip()
    if "@" in spec:
        role, _, sel = spec.partition("@")
        if not role or not sel:
            raise TargetError(f"target {spec!r}: expected role@selector, e.g. worker@all")
        return role, sel
    if spec in NODE_SELECTORS or _is_node_list(spec):
        return None, spec
    return spec, None


def _is_node_list(spec: str) -> bool:
    parts = spec.replace(",", "+").split("+")
    return all(p.startswith("n") and p[1:].isdigit() for p in parts if p) and bool(spec)


def pick_nodes(
    selector: str, nodes: Sequence[str], rng: random.Random, primaries: Sequence[str] = ()
) -> list[str]:
    """Nodes for a selector, drawn from ``rng`` (sorted input, so the draw depends on the seed only)."""
    nodes = sorted(nodes)
    n = len(nodes)
    if selector == "all":
        return list(nodes)
    if selector == "one":
        return [rng.choice(nodes)] if nodes else []
    if selector == "minority":
        return sorted(rng.sample(nodes, majority(n) - 1))
    if selector == "majority":
        return sorted(rng.sample(nodes, majority(n)))
    if selector == "minority-third":
        return sorted(rng.sample(nodes, min(n, minority_third(n))))
    if selector == "primaries":
        return sorted(p for p in primaries if p in nodes)
    if _is_node_list(selector):
        want = [p for p in selector.replace(",", "+").split("+") if p]
        unknown = [w for w in want if w not in nodes]
        if unknown:
            raise TargetError(f"unknown node(s) {', '.join(unknown)}; nodes are {', '.join(nodes)}")
        return sorted(set(want))
    raise TargetError(
        f"unknown node selector {selector!r}; use {', '.join(NODE_SELECTORS)} or node names (n1+n2)"
    )


def _ask(ctx: RunContext, workload: Any, role: str, builtin: bool) -> list[Target] | None:
    """The workload's answer for ``role``; for a role chaos knows itself, an empty answer counts
    as "not mine" (a workload that returns [] for every role it does not know still works)."""
    if not isinstance(workload, RoleResolver):
        return None
    got = workload.resolve_role(ctx, role)
    if got is None or (builtin and not got):
        return None
    return sorted(got, key=lambda t: (t.node, t.process or ""))


def primaries(ctx: RunContext, workload: Any) -> list[str]:
    """The workload's primaries if it names them, else the etcd leader's node."""
    got = _ask(ctx, workload, "primaries", builtin=True)
    if got is not None:
        return sorted({t.node for t in got})
    from chaos.workloads.systems import etcd

    lead = etcd.leader(ctx)
    return [lead] if lead else []


def role_targets(ctx: RunContext, workload: Any, role: str) -> list[Target]:
    """Every process that plays ``role`` now (sorted), or raise when the role is unknown."""
    builtin = role in BUILTIN_ROLES or bool(ctx.supervisor.processes(role))
    got = _ask(ctx, workload, role, builtin)
    if got is not None:
        return got
    if role == "leader":
        from chaos.workloads.systems import etcd

        lead = etcd.leader(ctx)
        return [Target(node=lead, process="etcd")] if lead else []
    if role == "broker":
        return sorted(
            (Target(node=p.node, process=p.name) for p in ctx.supervisor.processes("nats")),
            key=lambda t: t.node,
        )
    procs = ctx.supervisor.processes(role)
    if not procs:
        known = sorted({p.role for p in ctx.supervisor.processes()} | set(BUILTIN_ROLES))
        raise TargetError(
            f"unknown target {role!r}; node selectors: {', '.join(NODE_SELECTORS)}; "
            f"roles here: {', '.join(known)}"
        )
    return sorted((Target(node=p.node, process=p.name) for p in procs), key=lambda t: t.node)


def resolve_targets(ctx: RunContext, workload: Any, spec: str, rng: random.Random) -> list[Target]:
    """Resolve ``spec`` (see the module docstring) to concrete targets, drawing from ``rng``."""
    role, selector = split_spec(spec)
    nodes = list(ctx.cluster.nodes)
    prim = primaries(ctx, workload) if selector == "primaries" else []
    if role is None:
        assert selector is not None
        return [Target(node=n) for n in pick_nodes(selector, nodes, rng, prim)]
    players = role_targets(ctx, workload, role)
    if selector is None:
        if role in BUILTIN_ROLES or not ctx.supervisor.processes(role):
            return players  # whoever plays the role now: nothing to draw
        return [rng.choice(players)] if players else []
    on = set(pick_nodes(selector, sorted({t.node for t in players}), rng, prim))
    return [t for t in players if t.node in on]


def processes_of(ctx: RunContext, targets: Sequence[Target]) -> list[Target]:
    """Node-level targets expanded to every process the run supervises there, in start order.

    Start order matters for ``kill``: etcd and the broker come back before the services that use
    them.
    """
    out: list[Target] = []
    for t in targets:
        if t.process is not None:
            out.append(t)
            continue
        out += [
            Target(node=t.node, process=p.name)
            for p in ctx.supervisor.processes()
            if p.node == t.node
        ]
    unique: list[Target] = []
    for t in out:
        if t not in unique:
            unique.append(t)
    return unique


def host_token(ctx: RunContext, t: Target) -> str | None:
    """``hostpid:starttime`` of a target process, for healing it from outside a dead run."""
    host_pid = getattr(ctx.cluster, "host_pid", None)
    if host_pid is None or t.process is None:
        return None
    hp = host_pid(t.node, t.process)
    if hp is None:
        return None
    from chaos.cluster.docker import owner_token

    return owner_token(hp)


class TargetedFault:
    """The part of a fault that names nodes or processes by a target spec (``one``, ``worker``...).

    Resolution draws only from the rng it is given, so the seed replays it; it changes nothing.
    """

    def __init__(self, workload: Any = None) -> None:
        self.workload = workload

    def resolve(self, ctx: RunContext, spec: str | None, rng: Any) -> Resolved:
        spec = spec or "one"
        return Resolved(spec=spec, targets=tuple(resolve_targets(ctx, self.workload, spec, rng)))
