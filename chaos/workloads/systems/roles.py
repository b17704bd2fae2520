"""The roles the shipped systems play, for workloads' ``resolve_role``: ``leader`` (the etcd
member that leads now), ``primaries`` (its node) and ``broker`` (the JetStream server)."""

from __future__ import annotations

from chaos.core.context import RunContext
from chaos.core.target import RoleUnplayed, Target
from chaos.workloads.systems import etcd

# the role words a target may use on a workload that runs each system (its Names.roles)
# etcd-proxy: the root-owned proxy in front of each member (chaos.workloads.systems.etcd_proxy)
ETCD_ROLES = ("etcd", "etcd-proxy", "leader", "primaries")
# nats-proxy: the root-owned proxy in front of each broker (chaos.workloads.systems.nats_proxy)
NATS_ROLES = ("nats", "nats-proxy", "broker")


def system_role(ctx: RunContext, role: str) -> list[Target] | None:
    """Who plays ``role`` now ([] when nobody does), or None when no system here has the role."""
    if role in ("leader", "primaries"):
        if not ctx.supervisor.processes("etcd"):
            return None
        lead = etcd.leader(ctx)
        if lead is None:
            # no member answered (an election, or a loaded machine): asked again, not "nobody"
            raise RoleUnplayed(f"{role}: no etcd member named a leader just now")
        return [Target(node=lead, process="etcd" if role == "leader" else None)]
    if role == "broker":
        brokers = ctx.supervisor.processes("nats")
        if not brokers:
            return None
        return [Target(node=p.node, process=p.name) for p in brokers]
    return None
