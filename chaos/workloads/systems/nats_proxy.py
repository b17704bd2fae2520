"""Each node's broker points: a root-owned NATS proxy between the node's services and the broker,
and the firewall rule that makes it their only way to it (the proxy itself is
chaos.node.nats_proxy).

Why: a fault aimed at a broker step (a publish, an ACK, a delivery) was held inside the
solution's own process (lab3's hold points), where the code under test can read the arming or
replace the hook. The proxy is root's and sees every frame the node's services send or get; the
orchestrator arms it through a root-only control folder, as it arms the etcd proxy's write
points (chaos.workloads.systems.etcd_proxy, whose arming, release and firing note it shares), and
finds the process that sent a held frame by its TCP port, from the host.

The services get ``nats://<their user>@127.0.0.1:PORT`` — their node's proxy, on loopback only —
and an OUTPUT rule in the node's network namespace rejects every TCP connection of any process but
root's to the broker's port on any address (the broker's own node included), so the proxy is the
only way in. The proxy and the broker run as root, which the rule does not touch.
"""

from __future__ import annotations

from typing import Any

from chaos.cluster.base import Cluster
from chaos.core.context import RunContext
from chaos.core.supervisor import ProcessSpec
from chaos.workloads.systems import etcd_proxy, nats

PORT = 4223
# root's folder (0700) in the node's log folder, as the etcd proxy's (etcd_proxy.STATE)
STATE = "/var/log/chaos/nats-proxy"
CONTROL, JOURNAL = etcd_proxy.state_files(STATE)
# the deliveries in flight on the node (chaos.node.deliveries.FILE), root's: the node's etcd
# proxy reads it before a read point gated on a delivery fires
DELIVERIES = f"{STATE}/deliveries.json"
NAME = "nats-proxy"


def service_url(ctx: RunContext) -> str:
    """What a node's services get as the broker: their own node's proxy, with their own user."""
    a = nats.auth(ctx)
    return a.url("127.0.0.1", PORT, admin=False) if a else f"nats://127.0.0.1:{PORT}"


def process(ctx: RunContext, node: str) -> ProcessSpec:
    upstream = f"{ctx.cluster.address(nats.broker_node(ctx))}:{nats.PORT}"
    return etcd_proxy.proxy_process(ctx, node, NAME, f"127.0.0.1:{PORT}", upstream, STATE, [])


def deploy(ctx: RunContext) -> None:
    """The guard, then every node's proxy (they connect to the broker per client, so they may
    start before it listens); :func:`wait_listening` before the services start."""
    etcd_proxy.prepare(ctx)
    etcd_proxy.install_guard(ctx.cluster, (nats.PORT,))
    ctx.supervisor.start_processes([process(ctx, n) for n in ctx.cluster.nodes])


def wait_listening(cluster: Cluster, wait: float = 20.0) -> None:
    etcd_proxy.wait_listening(cluster, wait, PORT, NAME)


def collect(ctx: RunContext) -> dict[str, Any]:
    """Every node's NATS proxy journal (what it held, released, dropped, refused or forwarded
    raw), in the etcd journal's form (``etcd_proxy.collect``)."""
    return etcd_proxy.collect(ctx, JOURNAL, NAME)
