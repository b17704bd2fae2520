"""Target specs: which nodes or processes a fault hits.

Grammar (one string; the CLI writes node lists with ``+`` because ``,`` separates faults)::

    node selector   one | minority | majority | minority-third | all | primaries | n1 | n1+n2
    role            worker | relay | api | etcd | nats | orders ... (any supervised component)
                    leader | broker | holder ... (roles the workload resolves: ``resolve_role``;
                    the shipped systems give ``leader`` = the etcd leader's etcd and ``broker`` =
                    the JetStream server)
    role@selector   worker@all, etcd@majority, worker@n2 — the role's processes on those nodes

A bare node selector means the node's whole system (every process the run supervises there; for
``freeze`` and ``partition``, the node itself). A bare component role means one of its processes,
drawn from the seeded stream; ``leader``, ``broker`` and workload roles mean whoever plays the role
at the moment the fault starts, which depends on the run's timing, not only on the seed.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Collection, Sequence

from chaos.cluster.base import Reapable, node_names
from chaos.core.capabilities import RoleResolver
from chaos.core.context import RunContext
from chaos.core.target import Resolved, Target
from chaos.core.workload import Workload
from chaos.nemesis.grudge import majority, minority_third

NODE_SELECTORS = ("one", "minority", "majority", "minority-third", "all", "primaries")
# roles the systems chaos ships know how to find (see chaos.workloads.systems.roles); listed in
# error messages even before any process plays them
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


def did_you_mean(word: str, known: Collection[str]) -> str:
    """`` (did you mean 'worker'?)`` for a near miss among ``known``, else ""."""
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_target(spec: str, roles: Collection[str] | None, nodes: int) -> None:
    """Refuse, before anything starts, a target spec that can name nothing here: a role the
    workload does not have (``roles``: every role it declares; empty: the fault takes nodes only;
    None: not declared, not checked), an unknown selector, a node past the cluster's ``nodes`` (0: not known yet). Who plays a role
    is a fact of the moment the fault starts, resolved then."""
    role, selector = split_spec(spec)
    if selector is not None and selector not in NODE_SELECTORS:
        if not _is_node_list(selector):
            raise TargetError(
                f"unknown node selector {selector!r}{did_you_mean(selector, NODE_SELECTORS)}; "
                f"use {', '.join(NODE_SELECTORS)} or node names (n1+n2)"
            )
        names = node_names(nodes)
        past = [p for p in selector.replace(",", "+").split("+") if p and p not in names]
        if nodes and past:
            raise TargetError(f"no node {', '.join(past)}: the nodes are {names[0]}..{names[-1]}")
    if role is not None and roles is not None and not roles:
        raise TargetError(
            f"unknown node selector {role!r}{did_you_mean(role, NODE_SELECTORS)}: this fault "
            f"takes nodes only ({', '.join(NODE_SELECTORS)} or node names, n1+n2)"
        )
    if role is not None and roles is not None and role not in roles:
        what = "role or node selector" if selector is None else "role"
        raise TargetError(
            f"unknown {what} {role!r}"
            f"{did_you_mean(role, [*roles, *NODE_SELECTORS])}; node selectors: "
            f"{', '.join(NODE_SELECTORS)}; roles here: {', '.join(sorted(roles)) or 'none'}"
        )


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


def _ask(ctx: RunContext, workload: Workload | None, role: str) -> list[Target] | None:
    """The workload's answer for ``role`` (sorted), or None when it does not know the role."""
    if not isinstance(workload, RoleResolver):
        return None
    # "whoever plays the role now": a workload that tells it from the services' events (lab1's
    # holder) must see the latest ones, whether or not anything else polled them lately
    ctx.events.poll()
    got = workload.resolve_role(ctx, role)
    if got is None:
        return None
    return sorted(got, key=lambda t: (t.node, t.process or ""))


def primaries(ctx: RunContext, workload: Workload | None) -> list[str]:
    """The nodes the workload calls its primaries now (its system's leader, say); [] if none."""
    got = _ask(ctx, workload, "primaries")
    return sorted({t.node for t in got}) if got else []


def role_targets(ctx: RunContext, workload: Workload | None, role: str) -> list[Target]:
    """Every process that plays ``role`` now (sorted), or raise when the role is unknown.

    A role is the workload's (``holder``, ``leader``, ``broker``: whoever plays it at this moment)
    or else a supervised component (``worker``, ``etcd``): its processes on every node.
    """
    got = _ask(ctx, workload, role)
    if got is not None:
        return got
    procs = ctx.supervisor.processes(role)
    if not procs:
        known = sorted({p.role for p in ctx.supervisor.processes()} | set(BUILTIN_ROLES))
        raise TargetError(
            f"unknown target {role!r}; node selectors: {', '.join(NODE_SELECTORS)}; "
            f"roles here: {', '.join(known)}"
        )
    return sorted((Target(node=p.node, process=p.name) for p in procs), key=lambda t: t.node)


def resolve_targets(
    ctx: RunContext, workload: Workload | None, spec: str, rng: random.Random
) -> list[Target]:
    """Resolve ``spec`` (see the module docstring) to concrete targets, drawing from ``rng``."""
    role, selector = split_spec(spec)
    nodes = list(ctx.cluster.nodes)
    prim = primaries(ctx, workload) if selector == "primaries" else []
    if role is None:
        assert selector is not None
        return [Target(node=n) for n in pick_nodes(selector, nodes, rng, prim)]
    players = role_targets(ctx, workload, role)
    if selector is None:
        if not ctx.supervisor.processes(role):
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


def reap_handle(ctx: RunContext, t: Target) -> str | None:
    """The backend's handle for healing ``t`` from outside a dead run (None: it has none)."""
    if not isinstance(ctx.cluster, Reapable):
        return None
    return ctx.cluster.reap_handle(t.node, t.process)


class TargetedFault:
    """The part of a fault that names nodes or processes by a target spec (``one``, ``worker``...).

    Resolution draws only from the rng it is given, so the seed replays it; it changes nothing.
    """

    def __init__(self, workload: Workload | None = None) -> None:
        self.workload = workload

    def resolve(self, ctx: RunContext, spec: str | None, rng: random.Random) -> Resolved:
        spec = spec or "one"
        return Resolved(spec=spec, targets=tuple(resolve_targets(ctx, self.workload, spec, rng)))
