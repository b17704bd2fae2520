"""What every generic workload on the real 3-member etcd shares (``etcd-register``,
``etcd-append``, ``etcd-rw-register``): the system it deploys, what a fault may target, and how
its final state is read. A workload subclasses :class:`OnEtcd` and adds its client and check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos.core.capabilities import option_values
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.spec import TestSpec
from chaos.core.target import Target
from chaos.workloads.systems import etcd
from chaos.workloads.systems.roles import ETCD_ROLES, system_role


class OnEtcd:
    name: str
    # WorkloadOptions: none unless a subclass declares some (a -o is refused, never ignored)
    options: tuple[WorkloadOption, ...] = ()
    # Names: what a fault target may name (etcd's members report no events)
    roles = ETCD_ROLES
    event_kinds: tuple[str, ...] = ()

    def preflight(self, spec: TestSpec) -> None:
        if spec.concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        option_values(self, spec)

    def deploy(self, ctx: RunContext) -> None:
        ctx.progress("starting etcd on every node")
        etcd.deploy(ctx)

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None:
        return system_role(ctx, role)

    def pause_target(self, ctx: RunContext) -> Target | None:
        node = ctx.rng_for("pause-target").choice(ctx.cluster.nodes)
        return Target(node=node, process="etcd")

    def recovered(self, ctx: RunContext) -> bool:
        return True


def final_values(
    ctx: RunContext, name: str, prefix: str, decode: Callable[[bytes], Any]
) -> dict[str, Any]:
    """The final state: ``name`` → every key under ``prefix`` (the prefix cut off) → its decoded
    value, and the member that leads."""
    c = etcd.client(ctx)
    try:
        return {
            name: {
                meta.key.decode().removeprefix(prefix): decode(v)
                for v, meta in c.get_prefix(prefix)
            },
            "leader": etcd.leader(ctx),
        }
    finally:
        c.close()
