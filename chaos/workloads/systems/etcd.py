"""A 3-member (one per node) etcd cluster, started from the etcd binary in the node image."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import etcd3

from chaos.core.context import RunContext
from chaos.core.supervisor import ProcessSpec
from chaos.workloads.systems import etcd_proxy

CLIENT_PORT = 2379
PEER_PORT = 2380


def endpoints(ctx: RunContext) -> list[str]:
    return [f"{ctx.cluster.address(n)}:{CLIENT_PORT}" for n in ctx.cluster.nodes]


QUOTA_BACKEND_BYTES = 128 << 20


def process(ctx: RunContext, node: str) -> ProcessSpec:
    addr = ctx.cluster.address(node)
    initial = ",".join(
        f"{n}=http://{ctx.cluster.address(n)}:{PEER_PORT}" for n in ctx.cluster.nodes
    )
    return ProcessSpec(
        node=node,
        name="etcd",
        role="etcd",
        infrastructure=True,
        argv=[
            "etcd",
            "--name", node,
            "--data-dir", "/data/etcd",
            "--listen-client-urls", f"http://0.0.0.0:{CLIENT_PORT}",
            "--advertise-client-urls", f"http://{addr}:{CLIENT_PORT}",
            "--listen-peer-urls", f"http://0.0.0.0:{PEER_PORT}",
            "--initial-advertise-peer-urls", f"http://{addr}:{PEER_PORT}",
            "--initial-cluster", initial,
            "--initial-cluster-state", "new",
            "--initial-cluster-token", f"chaos-{ctx.cluster.run_id}",
            # a short election timeout keeps recovery after a pause or partition within seconds
            "--heartbeat-interval", "100",
            "--election-timeout", "1000",
            "--log-level", "warn",
            # the code under test has an etcd client: writing past this is refused by etcd's
            # own alarm (NOSPACE) before the node's /data (512 MiB, a tmpfs) is full with the
            # database and its write-ahead log (as much again, in 64 MB files)
            "--quota-backend-bytes", str(QUOTA_BACKEND_BYTES),
        ],
    )  # fmt: skip


# The largest answer the orchestrator's clients take (grpc's default is 4 MB). etcd sends a
# watch's history in answers of up to 1,000 revisions, so a solution that stores values of a few
# KB made one over 4 MB, and the record of the run failed; an answer past this fails the read it
# belongs to, and the run is unknown, naming it (the record must fit in memory anyway).
MAX_ANSWER = 32 << 20
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_ANSWER)]


def client(ctx: RunContext, timeout: float = 3.0) -> Any:
    eps = [
        etcd3.Endpoint(
            ctx.cluster.address(n), CLIENT_PORT, secure=False, time_retry=1.0, opts=GRPC_OPTIONS
        )
        for n in ctx.cluster.nodes
    ]
    return etcd3.MultiEndpointEtcd3Client(eps, timeout=timeout, failover=True)


def member_client(ctx: RunContext, node: str, timeout: float = 2.0) -> Any:
    return etcd3.client(
        ctx.cluster.address(node), CLIENT_PORT, timeout=timeout, grpc_options=GRPC_OPTIONS
    )


def deploy(
    ctx: RunContext,
    wait: float = 30.0,
    *,
    proxies_ready: bool = True,
    beside: Sequence[Callable[[], object]] = (),
    scope: str | None = None,
) -> None:
    """Start the members, and in front of each its node's author-journal proxy (the only way
    the node's services reach etcd, see chaos.workloads.systems.etcd_proxy); return when the
    cluster answers and every proxy listens.

    Everything starts side by side — the firewall rules, the proxies, the members (each start
    waits for its pid file), and ``beside``: the caller's other starts that need nothing of
    etcd (the broker, the services' egress chain), awaited before this returns — and the waits
    overlap: bring-up pays for the slowest, not for the sum. The rules only have to be in place
    before the services start, after this returns. ``proxies_ready=False``: return once etcd
    answers; the caller has other things to do first and calls ``etcd_proxy.wait_listening``
    just before its services (a proxy is a Python process starting on its node's one CPU).
    ``scope``: the lab's key prefix, the only keys the proxies forward (chaos.node.etcd_scope)."""
    etcd_proxy.prepare(ctx)
    members = [process(ctx, n) for n in ctx.cluster.nodes]
    proxies = [etcd_proxy.process(ctx, n, CLIENT_PORT, scope) for n in ctx.cluster.nodes]
    with ThreadPoolExecutor(max_workers=len(members) + len(proxies) + len(beside) + 2) as pool:
        # the members first, alone: their election is bring-up's longest wait, and a start is a
        # round trip through the engine that slows the others; the proxies start (and are ready)
        # while the members elect
        started = [pool.submit(ctx.supervisor.start_process, s) for s in members]
        pending: list[Future[Any]] = [pool.submit(etcd_proxy.install_guard, ctx.cluster)]
        pending += [pool.submit(f) for f in beside]
        for f in started:
            f.result()
        proxied = [pool.submit(ctx.supervisor.start_process, s) for s in proxies]
        if proxies_ready:

            def listening() -> None:
                for f in proxied:
                    f.result()  # a proxy that did not start fails here, not after the wait
                etcd_proxy.wait_listening(ctx.cluster, wait)

            pending.append(pool.submit(listening))
        _wait_healthy(ctx, wait)
        for f in [*proxied, *pending]:
            f.result()


def _wait_healthy(ctx: RunContext, wait: float) -> None:
    deadline = time.monotonic() + wait
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            ok = 0
            for node in ctx.cluster.nodes:
                c = member_client(ctx, node)
                try:
                    c.get("/chaos/health")
                    ok += 1
                finally:
                    c.close()
            if ok == len(ctx.cluster.nodes):
                return
        except Exception as e:  # members still electing
            last = e
        time.sleep(0.1)
    raise RuntimeError(f"etcd cluster not healthy after {wait}s: {last}")


def leader(ctx: RunContext) -> str | None:
    """The node whose member is the current leader, or None when no member answers."""
    for node in ctx.cluster.nodes:
        try:
            c = member_client(ctx, node, timeout=3.0)
            try:
                st = c.status()
                lid = st.leader.id
                for m in c.members:
                    if m.id == lid:
                        return str(m.name)
            finally:
                c.close()
        except Exception:
            continue
    return None


class ProcessClients:
    """One etcd client per client process of a generic workload, talking to the member the
    process is pinned to (``process`` mod the nodes): a process keeps its member, as a Jepsen
    client keeps its node. A client whose op failed is dropped and made again at its next op.
    As a context manager, it closes every client at the end of the block."""

    def __init__(self, ctx: RunContext, timeout: float = 1.0) -> None:
        self._ctx = ctx
        self._timeout = timeout
        self._clients: dict[int, Any] = {}

    def get(self, process: int) -> Any:
        if process not in self._clients:
            nodes = self._ctx.cluster.nodes
            node = nodes[process % len(nodes)]
            self._clients[process] = etcd3.client(
                self._ctx.cluster.address(node),
                CLIENT_PORT,
                timeout=self._timeout,
                grpc_options=GRPC_OPTIONS,
            )
        return self._clients[process]

    def drop(self, process: int) -> None:
        self._clients.pop(process, None)

    def close(self) -> None:
        for c in self._clients.values():
            c.close()

    def __enter__(self) -> ProcessClients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
