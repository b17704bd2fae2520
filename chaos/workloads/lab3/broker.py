"""JetStream set-up and read-back for lab3, from the orchestrator's side."""

from __future__ import annotations

import asyncio
from typing import Any

from chaos.workloads.lab3 import keys


async def _config(js: Any) -> dict[str, Any]:
    """The broker's configuration as chaos checks it has not changed: every stream and consumer
    there is, each one's configuration as the broker reports it, and when it was created (a
    consumer deleted and made again with the same settings starts its counts over)."""
    streams: dict[str, Any] = {}
    for si in await js.streams_info():
        name = si.config.name
        consumers = {}
        for ci in await js.consumers_info(name):
            consumers[ci.name] = {
                "config": ci.config.as_dict(),
                "created": str(ci.created),
                "paused": bool(ci.paused),
            }
        streams[name] = {
            "config": si.config.as_dict(),
            "created": str(si.created),
            "consumers": consumers,
        }
    return {"streams": streams}


async def _ensure(url: str, ack_wait: float) -> dict[str, Any]:
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType, StreamConfig

    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=3)
    try:
        js = nc.jetstream()
        # limits retention (not work-queue) so that the stream's message count is the number of
        # copies ever published: the figure the lab report asks for
        await js.add_stream(
            StreamConfig(
                name=keys.STREAM,
                subjects=[keys.SUBJECT],
                storage=StorageType.FILE,
                retention=RetentionPolicy.LIMITS,
            )
        )
        await js.add_consumer(
            keys.STREAM,
            ConsumerConfig(
                durable_name=keys.CONSUMER,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=ack_wait,
                max_deliver=-1,
                max_ack_pending=1000,
            ),
        )
        return await _config(js)
    finally:
        await nc.close()


def ensure_stream(url: str, ack_wait: float, attempts: int = 40) -> dict[str, Any]:
    """Create the stream and the durable consumer (chaos's own user: the services may not);
    returns the configuration as the broker reports it right after (``read_config``)."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            return asyncio.run(_ensure(url, ack_wait))
        except Exception as e:  # the broker may still be starting
            last = e
            import time

            time.sleep(0.25)
    raise RuntimeError(f"could not set up the JetStream stream at {url}: {last}")


async def _read(url: str, messages: int = 0) -> dict[str, Any]:
    import json

    import nats

    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=2)
    try:
        js = nc.jetstream()
        si = await js.stream_info(keys.STREAM)
        ci = await js.consumer_info(keys.STREAM, keys.CONSUMER)
        out: dict[str, Any] = {
            "stream": {
                "messages": si.state.messages,
                "first_seq": si.state.first_seq,
                "last_seq": si.state.last_seq,
            },
            "consumer": {
                "num_redelivered": ci.num_redelivered,
                "num_ack_pending": ci.num_ack_pending,
                "num_pending": ci.num_pending,
                "delivered_stream_seq": ci.delivered.stream_seq if ci.delivered else None,
                # deliveries made, redeliveries included: beyond the stream's sequence, every one
                # is a redelivery the broker itself counted (num_redelivered only counts those
                # still unacknowledged)
                "delivered_consumer_seq": ci.delivered.consumer_seq if ci.delivered else None,
                "ack_floor_stream_seq": ci.ack_floor.stream_seq if ci.ack_floor else None,
            },
        }
        if messages:
            # what each message carries, by stream sequence (immutable once stored, so reading
            # it after the counts above is no race)
            last = int(si.state.last_seq or 0)
            found: dict[int, dict[str, str]] = {}
            for seq in range(max(int(si.state.first_seq or 1), last - messages + 1), last + 1):
                try:
                    body = json.loads((await js.get_msg(keys.STREAM, seq)).data or b"{}")
                except Exception:
                    continue  # deleted, or not JSON: no task to name
                if isinstance(body, dict):
                    found[seq] = {
                        "task_id": str(body.get("task_id")),
                        "event_id": str(body.get("event_id")),
                        "amount": str(body.get("amount")),
                    }
            out["messages"] = found
        return out
    finally:
        await nc.close()


def read_broker(url: str, messages: int = 0) -> dict[str, Any]:
    return asyncio.run(_read(url, messages))


async def _read_config(url: str) -> dict[str, Any]:
    import nats

    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=2)
    try:
        return await _config(nc.jetstream())
    finally:
        await nc.close()


def read_config(url: str) -> dict[str, Any]:
    """The broker's configuration now, as ``ensure_stream`` returned it at the start."""
    return asyncio.run(_read_config(url))


# how many of the stream's last messages a snapshot reads one by one (the state at a fault's firing
# needs the messages around the consumer's ack floor, not the whole stream of a long run)
MESSAGE_WINDOW = 200


def snapshot(url: str) -> dict[str, Any]:
    """The broker's own state: stream and consumer counts (``read_broker``) and, by stream
    sequence, the task and event id of the last ``MESSAGE_WINDOW`` messages, as JetStream stores
    them. One connection, the counts first."""
    return asyncio.run(_read(url, MESSAGE_WINDOW))
