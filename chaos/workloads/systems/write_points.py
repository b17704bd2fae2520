"""``WritePoints`` (chaos.core.capabilities) through the nodes' etcd proxies, and the broker's
points through their NATS proxies: the arming, the proxy's note, the sender found by the host,
and the orchestrator's own read of a key group's values (chaos.node.proxy_points,
chaos.node.nats_proxy, chaos.nemesis.writepoint)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from chaos.cluster.base import SocketOwners
from chaos.core.capabilities import BROKER_OPS, BrokerGroup
from chaos.core.context import RunContext
from chaos.node import deliveries
from chaos.workloads.systems import etcd, etcd_proxy, nats_proxy, record_values


class ProxyWritePoints:
    """``WritePoints`` (chaos.core.capabilities) through the nodes' etcd proxies, for a workload
    that declares ``write_groups`` and its writing components (``txn_functions``/``txn_roles``)."""

    write_groups: dict[str, tuple[str, ...]]
    txn_functions: dict[str, str]
    txn_roles: dict[str, str]
    # the broker's points (a workload with a broker behind the nodes' NATS proxies): none here
    broker_groups: dict[str, BrokerGroup] = {}
    broker_components: tuple[str, ...] = ()
    # a read point fires only on a read made while the reading node has a delivery of this broker
    # group in flight, as its NATS proxy saw it (chaos.node.deliveries): a read between
    # deliveries is no check the point is for. None: the first read of the group (lab1's)
    reads_during: str | None = None

    def delivery_window(self, ctx: RunContext) -> float | None:
        """How long after its delivery a delivery counts as in flight (None: until it ends)."""
        return None

    def arm_write_point(
        self,
        ctx: RunContext,
        op: str,
        moment: str,
        group: str,
        hold: float | None = None,
        then: int = 0,
    ) -> str:
        if op in BROKER_OPS:
            subjects = self.broker_groups[group].subjects(op)
            return etcd_proxy.arm_write_point(
                ctx, op, moment, subjects, hold, control=nats_proxy.CONTROL, then=then
            )
        during = None
        if op == "read" and self.reads_during is not None:
            acks = self.broker_groups[self.reads_during].acks
            during = deliveries.as_spec(nats_proxy.DELIVERIES, acks, self.delivery_window(ctx))
        prefixes = list(self.write_groups[group])
        return etcd_proxy.arm_write_point(ctx, op, moment, prefixes, hold, then=then, during=during)

    def write_point_fired(self, ctx: RunContext, gen: str) -> dict[str, Any] | None:
        # one generation, one proxy's note: both control folders are looked in (where the nodes
        # share a claims folder, both proxies claim there)
        return etcd_proxy.write_point_fired(ctx, gen) or (
            None
            if etcd_proxy.claims_folder(ctx) is not None
            else etcd_proxy.write_point_fired(ctx, gen, nats_proxy.CONTROL)
        )

    def write_point_writer(
        self, ctx: RunContext, node: str, port: int, op: str = "write"
    ) -> str | None:
        if not isinstance(ctx.cluster, SocketOwners):
            return None
        if op in BROKER_OPS:
            return ctx.cluster.socket_owner(
                node, sorted(self.broker_components), port, nats_proxy.PORT
            )
        names = sorted({*self.txn_functions.values(), *self.txn_roles.values()})
        return ctx.cluster.socket_owner(node, names, port, etcd_proxy.PORT)

    def release_write_point(
        self, ctx: RunContext, node: str, gen: str, *, forward: bool, op: str = "write"
    ) -> None:
        control = nats_proxy.CONTROL if op in BROKER_OPS else etcd_proxy.CONTROL
        etcd_proxy.release_write_point(ctx, node, gen, forward=forward, control=control)

    def disarm_write_point(self, ctx: RunContext, op: str = "write") -> None:
        control = nats_proxy.CONTROL if op in BROKER_OPS else etcd_proxy.CONTROL
        etcd_proxy.disarm_write_point(ctx, control)

    def group_state(self, ctx: RunContext, group: str) -> frozenset[str] | None:
        """What ``group`` holds, by the orchestrator's own read of etcd: a digest of each key with
        its value as the checkers read it; None when etcd did not answer."""
        c = etcd.client(ctx, timeout=2.0)
        try:
            return group_pairs(c, self.write_groups[group])
        except Exception:  # no answer: the hold runs its length
            return None
        finally:
            c.close()


def group_pairs(client: Any, prefixes: Iterable[str]) -> frozenset[str]:
    """A digest of each key under ``prefixes`` with its value decoded as the record decodes it
    (canonical JSON), so that a write which leaves a value as it was — a counter rewritten with
    its own value, an object with its fields reordered — adds no pair. A revision would move at
    any write, and the code under test could end a hold at will with such a write."""
    pairs = set()
    for prefix in prefixes:
        for raw, meta in client.get_prefix(prefix):
            key = meta.key.decode("utf-8", errors="replace")
            value = json.dumps(record_values.decode(raw), sort_keys=True, separators=(",", ":"))
            pairs.add(hashlib.sha256(f"{len(key)}:{key}{value}".encode()).hexdigest())
    return frozenset(pairs)
