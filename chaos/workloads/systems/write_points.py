"""``WritePoints`` (chaos.core.capabilities) through the nodes' etcd proxies: the arming, the
proxy's note, the sender found by the host, and the orchestrator's own read of a key group's
newest revision (chaos.node.proxy_points, chaos.nemesis.writepoint)."""

from __future__ import annotations

from typing import Any

from chaos.cluster.base import SocketOwners
from chaos.core.context import RunContext
from chaos.workloads.systems import etcd, etcd_proxy


class ProxyWritePoints:
    """``WritePoints`` (chaos.core.capabilities) through the nodes' etcd proxies, for a workload
    that declares ``write_groups`` and its writing components (``txn_functions``/``txn_roles``)."""

    write_groups: dict[str, tuple[str, ...]]
    txn_functions: dict[str, str]
    txn_roles: dict[str, str]

    def arm_write_point(self, ctx: RunContext, op: str, moment: str, group: str) -> str:
        return etcd_proxy.arm_write_point(ctx, op, moment, list(self.write_groups[group]))

    def write_point_fired(self, ctx: RunContext, gen: str) -> dict[str, Any] | None:
        return etcd_proxy.write_point_fired(ctx, gen)

    def write_point_writer(self, ctx: RunContext, node: str, port: int) -> str | None:
        if not isinstance(ctx.cluster, SocketOwners):
            return None
        names = sorted({*self.txn_functions.values(), *self.txn_roles.values()})
        return ctx.cluster.socket_owner(node, names, port, etcd_proxy.PORT)

    def release_write_point(self, ctx: RunContext, node: str, gen: str, *, forward: bool) -> None:
        etcd_proxy.release_write_point(ctx, node, gen, forward=forward)

    def disarm_write_point(self, ctx: RunContext) -> None:
        etcd_proxy.disarm_write_point(ctx)

    def group_revision(self, ctx: RunContext, group: str) -> int | None:
        """The newest revision that wrote a key of ``group``, by the orchestrator's own read of
        etcd (keys only), or None when etcd did not answer."""
        c = etcd.client(ctx, timeout=2.0)
        try:
            newest = 0
            for prefix in self.write_groups[group]:
                for _, meta in c.get_prefix(prefix, keys_only=True):
                    newest = max(newest, int(meta.mod_revision))
            return newest
        except Exception:  # no answer: the hold runs its length
            return None
        finally:
            c.close()
