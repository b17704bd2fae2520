"""The lab3 service on one node: ``api``, ``relay`` or ``worker`` (one process each).

Run as ``python3 -m chaos.workloads.lab3.service ROLE`` with its configuration in the environment
(set by the orchestrator). The transport here is given to students; their ``protocol.py`` supplies
``create`` and ``complete``. Fault points are switched on only through the orchestrator's control
folder (see chaos.node.runtime), never through the HTTP API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import etcd3

from chaos.node import solution
from chaos.node.runtime import EventLog, Hooks, Identity, env
from chaos.workloads.lab3 import keys
from chaos.workloads.lab3.protocol_api import COMMITTED, DUPLICATE, Store

RELAY_CRASH = "relay-crash-before-publish"
LOST_ACK = "lost-publish-ack"
WORKER_CRASH = "worker-crash-before-ack"


class Context:
    def __init__(self, component: str) -> None:
        self.ident = Identity(node=env("CHAOS_NODE"), component=component)
        root = Path(env("CHAOS_LIVE", "/chaos"))
        self.events = EventLog(root / "events" / f"{self.ident.node}-{component}.jsonl", self.ident)
        self.hooks = Hooks(root / "control", self.ident, self.events)
        self.protocol = solution.load(Path(env("CHAOS_SOLUTION")))
        self.nats_url = env("CHAOS_NATS", "nats://127.0.0.1:4222")
        self.ack_timeout = float(env("CHAOS_PUBLISH_ACK_TIMEOUT", "1.0"))
        self.work_seconds = float(env("CHAOS_WORK_SECONDS", "0.5"))
        endpoints = []
        for ep in env("CHAOS_ETCD", "127.0.0.1:2379").split(","):
            host, _, port = ep.rpartition(":")
            endpoints.append(etcd3.Endpoint(host, int(port), secure=False, time_retry=1.0))
        self.etcd = etcd3.MultiEndpointEtcd3Client(endpoints, timeout=3, failover=True)

    def store(self, before_commit: Any = None) -> Store:
        store = Store(self.etcd, before_commit)
        store.set_txn_hooks(self.hooks)  # txn points of the solution's create and complete
        return store


# ---------------------------------------------------------------- api


def run_api(ctx: Context, port: int) -> None:
    store = ctx.store()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:
            pass

        def _reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._reply(200, {"ok": True, "node": ctx.ident.node})
            else:
                self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            if self.path != "/tasks":
                self._reply(404, {"error": "not found"})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                task_id, amount = str(body["task_id"]), int(body["amount"])
            except (ValueError, KeyError, TypeError) as e:
                self._reply(400, {"error": f"bad request: {e}"})
                return
            event_id = str(uuid.uuid4())
            try:
                with store.calling("create", task_id=task_id):
                    got = ctx.protocol.create(store, task_id, amount, event_id)
            except Exception as e:
                ctx.events.emit("protocol-error", task_id=task_id, where="create", error=repr(e))
                traceback.print_exc()
                self._reply(500, {"error": f"{type(e).__name__}: {e}"})
                return
            ctx.events.emit(
                "task-accepted", task_id=task_id, event_id=got, amount=amount, new=got == event_id
            )
            self._reply(200, {"task_id": task_id, "event_id": got})

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    ctx.events.emit("start")
    server.serve_forever()


# ---------------------------------------------------------------- relay


CLAIM_TTL = 2


async def run_relay(ctx: Context) -> None:
    import nats

    nc = await nats.connect(ctx.nats_url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    js = nc.jetstream()
    store = ctx.store()
    ctx.events.emit("start")
    while True:
        try:
            pending = []
            for value, _meta in ctx.etcd.get_prefix(keys.OUTBOX_PREFIX):
                entry = json.loads(value)
                if entry.get("status") == "pending":
                    pending.append(entry)
            for entry in pending:
                await relay_one(ctx, store, nc, js, entry)
        except Exception as e:  # etcd or NATS unavailable: keep the intent, retry later
            ctx.events.emit("relay-error", error=f"{type(e).__name__}: {e}")
            await asyncio.sleep(0.5)
        await asyncio.sleep(0.1)


async def relay_one(ctx: Context, store: Store, nc: Any, js: Any, entry: dict[str, Any]) -> None:
    event_id, task_id = entry["event_id"], entry["task_id"]
    lease = ctx.etcd.lease(CLAIM_TTL)
    ok, _ = store.txn(
        compare=[store.absent(keys.outbox_claim(event_id))],
        success=[
            ctx.etcd.transactions.put(keys.outbox_claim(event_id), ctx.ident.node, lease=lease)
        ],
    )
    if not ok:
        lease.revoke()
        return  # another relay owns it for now; its claim expires if it dies
    try:
        cur, rev = store.get(keys.outbox(event_id))
        if cur is None or cur.get("status") != "pending":
            return
        attempt = int(cur.get("attempts", 0)) + 1
        store.txn(
            compare=[store.unchanged(keys.outbox(event_id), rev)],
            success=[store.put(keys.outbox(event_id), {**cur, "attempts": attempt})],
        )
        ctx.hooks.hold("publish", task_id=task_id, event_id=event_id)
        ctx.hooks.stop_for_crash_if_armed(RELAY_CRASH, task_id=task_id, event_id=event_id)
        payload = json.dumps(
            {"event_id": event_id, "task_id": task_id, "amount": entry["amount"]}
        ).encode()
        kind = "publish" if attempt == 1 else "publish-retry"
        if ctx.hooks.armed(LOST_ACK, task_id=task_id, event_id=event_id):
            await _publish_ack_lost(ctx, nc, payload, kind, task_id, event_id, attempt)
            return
        sent = time.monotonic()
        try:
            ack = await js.publish(keys.SUBJECT, payload, timeout=ctx.ack_timeout)
        except Exception as e:
            ctx.events.emit(
                kind, task_id=task_id, event_id=event_id, attempt=attempt, acked=False, at=sent
            )
            ctx.events.emit(
                "publish-ack-lost",
                task_id=task_id,
                event_id=event_id,
                attempt=attempt,
                error=f"{type(e).__name__}: {e}",
            )
            return
        ctx.events.emit(
            kind,
            task_id=task_id,
            event_id=event_id,
            attempt=attempt,
            acked=True,
            stream_seq=ack.seq,
            at=sent,
        )
        _mark_published(ctx, store, task_id, event_id, ack.seq)
    finally:
        with contextlib.suppress(Exception):  # the lease expires on its own
            lease.revoke()


async def _publish_ack_lost(
    ctx: Context, nc: Any, payload: bytes, kind: str, task_id: str, event_id: str, attempt: int
) -> None:
    """The lost-publish-ack fault point: the broker stores the message and sends its ACK to an
    inbox nobody listens on."""
    sent = time.monotonic()
    await nc.publish(keys.SUBJECT, payload, reply=f"_INBOX.lost.{uuid.uuid4().hex}")
    await nc.flush()
    ctx.events.emit(kind, task_id=task_id, event_id=event_id, attempt=attempt, acked=False, at=sent)
    await asyncio.sleep(ctx.ack_timeout)
    ctx.events.emit("publish-ack-lost", task_id=task_id, event_id=event_id, attempt=attempt)


def _mark_published(ctx: Context, store: Store, task_id: str, event_id: str, seq: int) -> None:
    """The outbox entry marked published (with its stream sequence), if still pending."""
    cur, rev = store.get(keys.outbox(event_id))
    if cur is not None and cur.get("status") == "pending":
        store.txn(
            compare=[store.unchanged(keys.outbox(event_id), rev)],
            success=[
                store.put(keys.outbox(event_id), {**cur, "status": "published", "stream_seq": seq})
            ],
        )
        ctx.events.emit("marked-published", task_id=task_id, event_id=event_id, stream_seq=seq)


# ---------------------------------------------------------------- worker


class _Delivery:
    def __init__(
        self, ctx: Context, msg: Any, loop: asyncio.AbstractEventLoop, event: dict[str, Any]
    ):
        self._ctx, self._msg, self._loop, self._event = ctx, msg, loop, event
        self.num_delivered = int(msg.metadata.num_delivered)
        self.acked = False
        self.committed = False

    def ack(self) -> None:
        if self.acked:
            return
        if self.committed:
            self._ctx.hooks.stop_for_crash_if_armed(
                WORKER_CRASH,
                task_id=self._event["task_id"],
                event_id=self._event["event_id"],
                # while the orchestrator reads the state, the delivery stays this worker's
                keepalive=self._in_progress,
            )
        asyncio.run_coroutine_threadsafe(self._msg.ack_sync(timeout=2), self._loop).result(5)
        self.acked = True
        self._ctx.events.emit(
            "ack",
            task_id=self._event["task_id"],
            event_id=self._event["event_id"],
            num_delivered=self.num_delivered,
        )

    def _in_progress(self) -> None:
        asyncio.run_coroutine_threadsafe(self._msg.in_progress(), self._loop).result(2)

    def before_commit(self) -> None:
        # a trigger may stop this worker here: after its delivery, right before it commits
        self._ctx.hooks.hold(
            "commit", task_id=self._event["task_id"], event_id=self._event["event_id"]
        )
        # the crash point sits between the two steps, whichever order a solution uses
        if self.acked:
            self._ctx.hooks.stop_for_crash_if_armed(
                WORKER_CRASH, task_id=self._event["task_id"], event_id=self._event["event_id"]
            )


async def run_worker(ctx: Context) -> None:
    import nats

    nc = await nats.connect(ctx.nats_url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    js = nc.jetstream()
    sub = await js.pull_subscribe(keys.SUBJECT, durable=keys.CONSUMER, stream=keys.STREAM)
    loop = asyncio.get_running_loop()
    ctx.events.emit("start")

    def compute(event: dict[str, Any]) -> dict[str, Any]:
        ctx.events.emit("compute", task_id=event["task_id"], event_id=event["event_id"])
        time.sleep(ctx.work_seconds)
        return {"amount": int(event["amount"]), "node": ctx.ident.node}

    while True:
        try:
            msgs = await sub.fetch(1, timeout=1)
        except (TimeoutError, nats.errors.TimeoutError):
            continue
        except Exception as e:
            ctx.events.emit("worker-error", error=f"{type(e).__name__}: {e}")
            await asyncio.sleep(0.5)
            continue
        for msg in msgs:
            await handle(ctx, loop, msg, compute)


async def handle(ctx: Context, loop: asyncio.AbstractEventLoop, msg: Any, compute: Any) -> None:
    event = json.loads(msg.data)
    task_id, event_id = event["task_id"], event["event_id"]
    delivery = _Delivery(ctx, msg, loop, event)
    ctx.events.emit(
        "delivery",
        task_id=task_id,
        event_id=event_id,
        num_delivered=delivery.num_delivered,
        stream_seq=msg.metadata.sequence.stream,
    )
    ctx.hooks.hold("delivery", task_id=task_id, event_id=event_id)
    store = ctx.store(before_commit=delivery.before_commit)

    def work() -> str:
        with store.calling("complete", task_id=task_id):
            return str(ctx.protocol.complete(store, event, compute, delivery))

    try:
        outcome = await loop.run_in_executor(None, work)
    except Exception as e:
        ctx.events.emit(
            "protocol-error",
            task_id=task_id,
            event_id=event_id,
            where="complete",
            error=f"{type(e).__name__}: {e}",
        )
        traceback.print_exc()
        return  # no ACK: the broker redelivers after AckWait
    if outcome == COMMITTED:
        delivery.committed = True
        ctx.events.emit(
            "commit",
            task_id=task_id,
            event_id=event_id,
            amount=event["amount"],
            num_delivered=delivery.num_delivered,
        )
    elif outcome == DUPLICATE:
        ctx.events.emit(
            "suppressed", task_id=task_id, event_id=event_id, num_delivered=delivery.num_delivered
        )
    else:
        ctx.events.emit(
            "protocol-error",
            task_id=task_id,
            event_id=event_id,
            where="complete",
            error=f"complete returned {outcome!r}, expected 'committed' or 'duplicate'",
        )
        return
    try:
        await loop.run_in_executor(None, delivery.ack)
    except Exception as e:
        ctx.events.emit("ack-failed", task_id=task_id, event_id=event_id, error=repr(e))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    role = argv[0] if argv else ""
    if role not in {"api", "relay", "worker"}:
        raise SystemExit("usage: python3 -m chaos.workloads.lab3.service api|relay|worker")
    ctx = Context(role)
    if role == "api":
        run_api(ctx, int(env("CHAOS_API_PORT", "8080")))
    elif role == "relay":
        asyncio.run(run_relay(ctx))
    else:
        asyncio.run(run_worker(ctx))


if __name__ == "__main__":
    threading.current_thread().name = "main"
    main()
