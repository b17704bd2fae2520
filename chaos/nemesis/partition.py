"""``partition``: cut the network between groups of nodes, verified by probes, healed by a flush.

Shapes (see chaos.nemesis.grudge): ``one``, ``halves``, ``majorities-ring``, ``minority-third``,
``bridge``, ``primaries``; a node selector or role (``n1``, ``n1+n2``, ``leader``, ``worker``)
isolates the nodes it names; a custom grudge comes from a schedule file. The mechanics (a chain of
the run's own in each node's namespace, DROP rules, probes) are in chaos.cluster.net.

The cut is verified after applying (every cut pair's TCP connection attempt times out, every other
pair connects or is refused) and the heal is verified the same way; a partition that probes do not
confirm is an error, not a silent no-op.
"""

from __future__ import annotations

import random
from typing import Any

from chaos.cluster import net
from chaos.cluster.base import Reapable
from chaos.cluster.node_kit.undo import UndoOp
from chaos.core.context import RunContext
from chaos.core.target import Resolved
from chaos.core.workload import Workload
from chaos.nemesis import grudge as gr
from chaos.nemesis.targets import primaries, resolve_targets

# every node of both labs runs an etcd member; its peer port is a fine thing to knock on (a
# refused connection proves the path as well as an accepted one)
PROBE_PORT = 2380


class PartitionFault:
    name = "partition"

    def __init__(self, workload: Workload | None = None, probe_port: int = PROBE_PORT) -> None:
        self.workload = workload
        self.probe_port = probe_port

    def resolve(self, ctx: RunContext, spec: str | None, rng: random.Random) -> Resolved:
        nodes = list(ctx.cluster.nodes)
        if spec is None:
            spec = rng.choice(gr.RANDOM_SHAPES)
        assert spec is not None
        if spec in gr.SHAPES:
            prim = primaries(ctx, self.workload) if spec == "primaries" else []
            return Resolved(spec=spec, grudge=gr.shape_grudge(spec, nodes, rng, primaries=prim))
        isolated = sorted({t.node for t in resolve_targets(ctx, self.workload, spec, rng)})
        if not isolated:
            raise RuntimeError(f"partition {spec}: nobody to isolate right now")
        if len(isolated) == len(nodes):
            raise RuntimeError(f"partition {spec}: isolating every node cuts nothing")
        return Resolved(spec=spec, grudge=gr.isolated_grudge(nodes, isolated))

    def custom(self, ctx: RunContext, grudge: object) -> Resolved:
        return Resolved(spec="grudge", grudge=gr.custom_grudge(list(ctx.cluster.nodes), grudge))

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        cluster = ctx.cluster
        grudge = resolved.grudge
        if not grudge:
            raise RuntimeError(f"partition {resolved.spec}: the grudge cuts nothing")
        handles = cluster if isinstance(cluster, Reapable) else None
        chain = net.chain_name(cluster.run_id)
        reap = [
            {
                "op": UndoOp.IPTABLES_FLUSH,
                "chain": chain,
                "containers": [handles.reap_handle(n) for n in cluster.nodes] if handles else [],
            }
        ]
        record: dict[str, Any] = {
            "grudge": grudge,
            "components": gr.components(cluster.nodes, grudge),
            "chain": chain,
            "action": "DROP",
        }

        # partitions that overlap in time share the chain: each heal removes its own rules and
        # checks the network against the cuts still in force
        active: dict[int, dict[str, list[str]]] = ctx.state.setdefault("partitions", {})
        key = id(record)

        def apply() -> list[dict[str, Any]]:
            active[key] = grudge
            net.apply_grudge(cluster, net.merge([grudge]))
            probes = net.verify(cluster, net.merge(active.values()), self.probe_port)
            return [{**record, "verified": net.summary(probes)}]

        def undo() -> dict[str, Any]:
            active.pop(key, None)
            net.remove_grudge(cluster, grudge)
            remaining = net.merge(active.values())
            # a lossy link (packet-loss) shares the chain: flush only when it holds nothing else
            idle = not remaining and not ctx.state.get("losses")
            flushed = net.heal(cluster) if idle else {}
            probes = net.verify(cluster, remaining, self.probe_port)
            return {"grudge": grudge, "flushed": flushed, "verified": net.summary(probes)}

        return ctx.faults.start(
            "partition",
            apply,
            undo,
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
            extra={"reap": reap},
        )
