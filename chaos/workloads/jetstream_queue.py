"""``jetstream-queue``: enqueue / dequeue through a durable JetStream consumer, then drain.

Checked with Jepsen's total-queue semantics: every acknowledged enqueue must come out; duplicates
are reported but allowed (JetStream is at-least-once: a message whose ACK was lost comes back).
A dequeue ACKs with ``ack_sync`` before it is recorded ``ok``; a message received but not ACKed is
not counted as dequeued, since the broker will deliver it again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from chaos.checkers.offline import check_history
from chaos.checkers.verdict import CheckResult
from chaos.core.capabilities import OptionValues, option_values
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.spec import TestSpec
from chaos.core.target import Target
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads.generic import classify, drive
from chaos.workloads.systems import nats
from chaos.workloads.systems.roles import NATS_ROLES, system_role

STREAM = "QUEUE"
SUBJECT = "queue.items"
CONSUMER = "dequeuers"


async def _setup(url: str, ack_wait: float) -> None:
    import nats as natspy
    from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig

    nc = await natspy.connect(url, connect_timeout=2)
    try:
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=STREAM, subjects=[SUBJECT], storage=StorageType.FILE))
        await js.add_consumer(STREAM, ConsumerConfig(durable_name=CONSUMER,
                                                     ack_policy=AckPolicy.EXPLICIT,
                                                     ack_wait=ack_wait, max_deliver=-1))  # fmt: skip
    finally:
        await nc.close()


class _Client:
    """One process's connection, driven from a private event loop thread."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = url
        self.nc: Any = None
        self.sub: Any = None

    def run(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def connect(self) -> None:
        import nats as natspy

        self.nc = await natspy.connect(self.url, connect_timeout=1, max_reconnect_attempts=-1,
                                       reconnect_time_wait=0.2)  # fmt: skip
        js = self.nc.jetstream()
        self.js = js
        self.sub = await js.pull_subscribe(SUBJECT, durable=CONSUMER, stream=STREAM)

    async def enqueue(self, value: int) -> None:
        await self.js.publish(SUBJECT, str(value).encode(), timeout=1.0)

    async def dequeue(self) -> int | None:
        import nats.errors

        try:
            msgs = await self.sub.fetch(1, timeout=0.5)
        except (TimeoutError, nats.errors.TimeoutError):
            return None
        for m in msgs:
            await m.ack_sync(timeout=1.0)
            return int(m.data)
        return None

    def close(self) -> None:
        try:
            if self.nc is not None:
                self.run(self.nc.close(), 2)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)


class JetStreamQueue:
    name = "jetstream-queue"
    options: tuple[WorkloadOption, ...] = (nats.ACK_WAIT,)  # any other -o is refused
    # Names: what a fault target may name (the broker reports no events)
    roles = NATS_ROLES
    event_kinds: tuple[str, ...] = ()

    def preflight(self, spec: TestSpec) -> None:
        option_values(self, spec)

    def takeover_seconds(self, values: OptionValues) -> float:
        return nats.ack_wait(values)

    def deploy(self, ctx: RunContext) -> None:
        ctx.progress("starting the JetStream broker")
        nats.deploy(ctx)
        asyncio.run(_setup(nats.url(ctx), nats.ack_wait(option_values(self, ctx.spec))))

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None:
        return system_role(ctx, role)

    def pause_target(self, ctx: RunContext) -> Target | None:

        return Target(node=nats.broker_node(ctx), process="nats")

    def _op(self, ctx: RunContext, clients: dict[int, _Client], process: int, f: str,
            value: Any) -> None:  # fmt: skip
        ctx.history.record(process=process, type=OpType.INVOKE, f=f, value=value)
        try:
            c = clients.get(process)
            if c is None:
                c = clients[process] = _Client(nats.url(ctx))
                c.run(c.connect(), 3)
            if f == "enqueue":
                c.run(c.enqueue(value), 2)
                ctx.history.record(process=process, type=OpType.OK, f=f, value=value)
            else:
                got = c.run(c.dequeue(), 3)
                if got is None:
                    ctx.history.record(process=process, type=OpType.FAIL, f=f, value=None,
                                       error="empty")  # fmt: skip
                else:
                    ctx.history.record(process=process, type=OpType.OK, f=f, value=got)
        except Exception as e:
            # an enqueue may have been stored; a dequeue whose ACK is unknown may come back: info
            ctx.history.record(process=process, type=OpType.INFO, f=f, value=value,
                               error=classify(e))  # fmt: skip
            bad = clients.pop(process, None)
            if bad is not None:
                bad.close()

    def run_client(self, ctx: RunContext) -> None:
        rng = ctx.rng_for("workload")
        counter = iter(range(10**12))
        lock = threading.Lock()
        clients: dict[int, _Client] = {}

        def step(process: int) -> None:
            with lock:
                enq = rng.random() < 0.5
                value = next(counter) if enq else None
            self._op(ctx, clients, process, "enqueue" if enq else "dequeue", value)

        try:
            drive(ctx, step, default_rate=40.0)
        finally:
            for c in clients.values():
                c.close()
        ctx.state["clients"] = None

    def recovered(self, ctx: RunContext) -> bool:
        return True

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        """Drain: dequeue until the queue has answered nothing for longer than the AckWait, and at
        least twice (recorded as ops). A message whose ACK was lost (an ``info`` dequeue) comes
        back only after the AckWait: a drain that stopped sooner would call it lost."""
        clients: dict[int, _Client] = {}
        process = 10_000  # a process of its own, so its ops never interleave with a client's
        quiet_for = nats.ack_wait(option_values(self, ctx.spec)) + 1.0
        empties = 0
        drained = 0
        since = time.monotonic()  # the drain's start, or its last message
        try:
            while drained < 100_000 and (empties < 2 or time.monotonic() - since <= quiet_for):
                before = len(ctx.history.ops)
                self._op(ctx, clients, process, "dequeue", None)
                last = ctx.history.ops[-1] if len(ctx.history.ops) > before else None
                if last is not None and last.type is OpType.OK:
                    drained += 1
                    empties = 0
                    since = time.monotonic()
                else:
                    empties += 1
        finally:
            for c in clients.values():
                c.close()
        return {"drained": drained}

    def check(self, run: StoredRun) -> list[CheckResult]:
        client_ops = [op for op in run.history if not op.is_nemesis]
        return check_history(client_ops, "total-queue")
