"""The nodes' NATS proxy (chaos.node.nats_proxy) against a real nats-server: every byte forwarded
as sent (authentication, headers, a split frame, a payload near the server's limit), and the
broker points it decides — a publish, an ACK, a delivery — held, noted with the sender's port,
released or dropped."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chaos.node.deliveries import FILE, Gate, InFlight
from chaos.node.nats_proxy import (
    Frame,
    FrameError,
    Framer,
    Proxy,
    is_delivery,
    is_final_ack,
    listen,
)
from chaos.node.proxy_points import ARM_FILE, Journal, WritePoints

nats = pytest.importorskip("nats")
pytestmark = pytest.mark.skipif(shutil.which("nats-server") is None, reason="no nats-server")

USER, PASSWORD = "lab", "s3cret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "nats-server did not listen"
            time.sleep(0.05)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """A real nats-server with JetStream and a user with a password."""
    port = _free_port()
    conf = tmp_path / "nats.conf"
    users = {"users": [{"user": USER, "password": PASSWORD}]}
    conf.write_text("authorization " + json.dumps(users) + "\n")
    proc = subprocess.Popen(
        ["nats-server", "-js", "-sd", str(tmp_path / "js"), "-a", "127.0.0.1", "-p", str(port),
         "-c", str(conf)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_listening(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(5)


def _state(journal: Path) -> Path:
    journal.parent.mkdir(parents=True, exist_ok=True)
    return journal.parent


@dataclass
class Running:
    port: int
    control: Path
    journal: Path
    server_port: int

    def url(self) -> str:
        return f"nats://{USER}:{PASSWORD}@127.0.0.1:{self.port}"

    def arm(self, **spec: Any) -> None:
        (self.control / ARM_FILE).write_text(json.dumps(spec))

    def fired(self, gen: str, wait: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            f = self.control / f"fired-{gen}"
            if f.exists():
                note: dict[str, Any] = json.loads(f.read_text())
                return note
            time.sleep(0.01)
        raise AssertionError(f"arming {gen} never fired")

    def release(self, gen: str, *, forward: bool) -> None:
        (self.control / f"release-{gen}").write_text(json.dumps({"forward": forward}))

    def lines(self) -> list[dict[str, Any]]:
        text = self.journal.read_text() if self.journal.exists() else ""
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def proxy(server: int, tmp_path: Path) -> Iterator[Running]:
    control = tmp_path / "control"
    control.mkdir()
    journal = tmp_path / "state" / "journal.jsonl"
    in_flight = InFlight(_state(journal) / FILE)
    p = Proxy(("127.0.0.1", server), WritePoints(control, "n1"), Journal(journal, "n1"), in_flight)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    srv = asyncio.run_coroutine_threadsafe(listen(p, "127.0.0.1", 0), loop).result(5)
    try:
        yield Running(srv.sockets[0].getsockname()[1], control, journal, server)
    finally:
        asyncio.run_coroutine_threadsafe(_shutdown(srv), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _shutdown(srv: asyncio.Server) -> None:
    """Every connection's pumps ended before the loop stops (none left to a closed loop)."""
    srv.close()
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


# ------------------------------------------------------------ framing


def test_a_frame_split_anywhere_comes_out_whole_and_unchanged() -> None:
    stream = (
        b"PUB tasks.created _INBOX.x 5\r\nhello\r\nPING\r\n"
        b"HPUB tasks.created 20 25\r\nNATS/1.0\r\nA: bcd\r\n\r\nhello\r\n"
        b"MSG tasks.created 1 $JS.ACK.TASKS.workers.1.1.1.1.1.0 3\r\nabc\r\n"
        b"pub $JS.ACK.TASKS.workers.1.1.1.1.1.0 4\r\n+ACK\r\n"
    )
    whole = Framer().feed(stream)
    for cut in range(1, len(stream)):
        f = Framer()
        got = f.feed(stream[:cut]) + f.feed(stream[cut:])
        assert got == whole, cut
    assert b"".join(fr.raw for fr in whole) == stream
    assert [fr.op for fr in whole] == ["PUB", "PING", "HPUB", "MSG", "PUB"]
    assert whole[2].headers == 20 and whole[2].body == b"hello"
    assert is_delivery(whole[3]) and not is_delivery(whole[0])
    assert is_final_ack(whole[4]) and not is_final_ack(whole[0])


def test_a_nak_or_progress_is_no_ack_and_an_empty_body_is() -> None:
    def pub(body: bytes) -> Frame:
        return Framer().feed(b"PUB $JS.ACK.S.C.1 %d\r\n%s\r\n" % (len(body), body))[0]

    assert is_final_ack(pub(b"")) and is_final_ack(pub(b"+TERM")) and is_final_ack(pub(b"+NXT"))
    assert not is_final_ack(pub(b"-NAK")) and not is_final_ack(pub(b"+WPI"))


@pytest.mark.parametrize(
    "bad",
    [b"PUB a x\r\n", b"PUB a 3\r\nabcd\r\n", b"HPUB a 9 3\r\n", b"X" * (70 << 10)],
)
def test_bytes_that_are_no_frame_are_refused(bad: bytes) -> None:
    with pytest.raises(FrameError):
        Framer().feed(bad)


# ------------------------------------------------------------ forwarding, real nats-server


def test_a_split_frame_sent_by_hand_arrives_whole(proxy: Running) -> None:
    async def go() -> bytes:
        nc = await nats.connect(proxy.url())
        sub = await nc.subscribe("split")
        await nc.flush()
        with socket.create_connection(("127.0.0.1", proxy.port), 5) as s:
            s.recv(4096)  # INFO
            s.sendall(
                f'CONNECT {{"user":"{USER}","pass":"{PASSWORD}","verbose":false}}\r\n'.encode()
            )
            for part in (b"PU", b"B split 1", b"1\r\nhello", b" worl", b"d\r\nPING\r\n"):
                s.sendall(part)
                time.sleep(0.05)
            assert b"PONG" in s.recv(4096)
        msg = await sub.next_msg(5)
        await nc.close()
        return bytes(msg.data)

    assert _run(go()) == b"hello world"


def test_a_large_payload_with_headers_goes_through_both_ways(proxy: Running) -> None:
    body = bytes(range(256)) * 3500  # 896000 bytes: under the server's 1 MiB max_payload
    body = body.replace(b"\r\n", b"\n\r")  # a payload is counted, never scanned for CRLF

    async def go() -> tuple[bytes, str | None]:
        nc = await nats.connect(proxy.url())
        sub = await nc.subscribe("big")
        await nc.publish("big", body, headers={"X-Chaos": "yes"})
        msg = await sub.next_msg(10)
        await nc.close()
        return bytes(msg.data), (msg.headers or {}).get("X-Chaos")

    got, header = _run(go())
    assert got == body and header == "yes"


def test_a_wrong_password_is_the_servers_answer_through_the_proxy(proxy: Running) -> None:
    async def go() -> None:
        await nats.connect(
            f"nats://{USER}:wrong@127.0.0.1:{proxy.port}", allow_reconnect=False, connect_timeout=3
        )

    with pytest.raises(Exception, match=r"(?i)authorization"):
        _run(go())


def test_bytes_that_are_no_nats_end_the_connection_and_are_journaled(proxy: Running) -> None:
    """A frame the proxy cannot cut is not forwarded raw (a connection no point could see):
    the connection ends, and the journal says why."""
    with socket.create_connection(("127.0.0.1", proxy.port), 5) as s:
        s.recv(4096)  # INFO
        s.sendall(f'CONNECT {{"user":"{USER}","pass":"{PASSWORD}"}}\r\nPUB a nine\r\n'.encode())
        s.settimeout(5)
        got = b""
        while chunk := s.recv(4096):  # until the proxy closes it
            got += chunk
    assert b"MSG" not in got
    lines = proxy.lines()
    assert [x["outcome"] for x in lines] == ["refused"], lines
    assert "byte count 'nine'" in lines[0]["reason"]


# ------------------------------------------------------------ points


async def _jetstream(url: str) -> tuple[Any, Any]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="TASKS", subjects=["tasks.created"])
    return nc, js


def test_a_publish_is_held_before_the_server_gets_it(proxy: Running) -> None:
    proxy.arm(gen="g1", op="publish", moment="before", keys=["tasks.created"])

    async def go() -> dict[str, Any]:
        nc, js = await _jetstream(proxy.url())  # the stream's API calls are no point
        port = nc._transport._io_writer.get_extra_info("sockname")[1]
        sent = asyncio.create_task(js.publish("tasks.created", b"t1", timeout=20))
        note = await asyncio.to_thread(proxy.fired, "g1")
        # held: the server has not got it (chaos's own connection reads the stream)
        nc2 = await nats.connect(f"nats://{USER}:{PASSWORD}@127.0.0.1:{proxy.server_port}")
        info = await nc2.jetstream().stream_info("TASKS")
        assert info.state.messages == 0 and not sent.done()
        proxy.release("g1", forward=True)
        ack = await sent
        info = await nc2.jetstream().stream_info("TASKS")
        await nc.close()
        await nc2.close()
        return {"note": note, "port": port, "seq": ack.seq, "messages": info.state.messages}

    got = _run(go())
    assert got["note"]["port"] == got["port"] and got["note"]["op"] == "publish"
    assert got["seq"] == 1 and got["messages"] == 1
    assert [line["outcome"] for line in proxy.lines()] == ["held", "released"]


def _pull_one(proxy: Running, op: str, moment: str, *, forward: bool) -> dict[str, Any]:
    """One task published, the worker's fetch and ACK through the proxy with ``op`` armed."""
    ack_keys = ["$JS.ACK.TASKS.workers."]

    async def go() -> dict[str, Any]:
        nc, js = await _jetstream(proxy.url())
        await js.add_consumer("TASKS", durable_name="workers", ack_wait=30)
        await js.publish("tasks.created", b"t1")
        proxy.arm(gen="g2", op=op, moment=moment, keys=ack_keys)
        sub = await js.pull_subscribe("tasks.created", durable="workers", stream="TASKS")
        port = nc._transport._io_writer.get_extra_info("sockname")[1]
        fetched = asyncio.create_task(sub.fetch(1, timeout=20))
        acked: asyncio.Task[Any] | None = None
        if op == "delivery":
            note = await asyncio.to_thread(proxy.fired, "g2")
            await asyncio.sleep(0.2)
            assert not fetched.done()
        else:
            msg = (await fetched)[0]
            acked = asyncio.create_task(msg.ack_sync(timeout=20))
            note = await asyncio.to_thread(proxy.fired, "g2")
            await asyncio.sleep(0.3)  # time enough for an answer the proxy did not hold
            assert not acked.done()  # before: the server has not got it; after: its answer waits
        out: dict[str, Any] = {"note": note, "port": port}
        nc2 = await nats.connect(f"nats://{USER}:{PASSWORD}@127.0.0.1:{proxy.server_port}")
        held = await nc2.jetstream().consumer_info("TASKS", "workers")
        out["held_ack_pending"] = held.num_ack_pending
        proxy.release("g2", forward=forward)
        try:
            out["result"] = await (acked or fetched)
        except Exception as e:  # a dropped frame closes the connection
            out["error"] = type(e).__name__
        info = await nc2.jetstream().consumer_info("TASKS", "workers")
        out["ack_pending"], out["delivered"] = info.num_ack_pending, info.delivered.consumer_seq
        await nc2.close()
        await nc.close()
        return out

    got: dict[str, Any] = _run(go())
    assert got["note"]["port"] == got["port"] and got["note"]["op"] == op
    assert got["note"]["keys"][0].startswith("$JS.ACK.TASKS.workers.")
    return got


def test_an_ack_held_before_and_dropped_never_reaches_the_server(proxy: Running) -> None:
    got = _pull_one(proxy, "ack", "before", forward=False)
    assert "error" in got  # the connection went with the dropped ACK
    assert (
        got["held_ack_pending"] == 1 and got["ack_pending"] == 1
    )  # the broker still owes the delivery: it will come again
    assert [line["outcome"] for line in proxy.lines()] == ["held", "dropped"]


def test_an_ack_held_after_reached_the_server_while_its_answer_waits(proxy: Running) -> None:
    got = _pull_one(proxy, "ack", "after", forward=True)
    # while the worker still waits for the answer, the broker has taken the ACK
    assert got["held_ack_pending"] == 0
    assert "error" not in got and got["ack_pending"] == 0


def test_a_delivery_is_held_before_the_worker_gets_it(proxy: Running) -> None:
    got = _pull_one(proxy, "delivery", "after", forward=True)
    assert [bytes(m.data) for m in got["result"]] == [b"t1"]
    # held after JetStream delivered it: the broker counts it delivered, unACKed
    assert got["held_ack_pending"] == 1 and got["delivered"] == 1


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl to make a certificate")
def test_a_client_that_opens_tls_is_forwarded_raw(tmp_path: Path) -> None:
    """A broker that requires TLS: the client's handshake follows the server's INFO, and the
    proxy forwards both directions as raw bytes from there (no point; journaled)."""
    import ssl

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    conf = tmp_path / "tls.conf"
    conf.write_text(f'tls {{ cert_file: "{cert}", key_file: "{key}" }}\n')
    proc = subprocess.Popen(
        ["nats-server", "-a", "127.0.0.1", "-p", str(port), "-c", str(conf)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    control = tmp_path / "control"
    control.mkdir()
    journal = tmp_path / "state" / "journal.jsonl"
    in_flight = InFlight(_state(journal) / FILE)
    p = Proxy(("127.0.0.1", port), WritePoints(control, "n1"), Journal(journal, "n1"), in_flight)

    async def go() -> bytes:
        srv = await listen(p, "127.0.0.1", 0)
        ctx = ssl.create_default_context(cafile=str(cert))
        url = f"tls://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
        nc = await nats.connect(url, tls=ctx, allow_reconnect=False, connect_timeout=5)
        sub = await nc.subscribe("sealed")
        await nc.publish("sealed", b"x" * 100_000)
        msg = await sub.next_msg(5)
        await nc.close()
        srv.close()  # the connections' pumps end with the test's loop
        return bytes(msg.data)

    try:
        _wait_listening(port)
        assert _run(go()) == b"x" * 100_000
    finally:
        proc.terminate()
        proc.wait(5)
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [x["outcome"] for x in lines] == ["raw"] and "TLS" in lines[0]["reason"]


def _gate(proxy: Running, acks: str = "$JS.ACK.TASKS.workers.") -> Gate:
    return Gate(proxy.journal.parent / FILE, (acks,))


def test_a_delivery_is_in_flight_from_its_forwarding_until_the_worker_ends_it(
    proxy: Running,
) -> None:
    """The record a gated read point asks (chaos.node.deliveries), as the proxy keeps it for a
    real broker: in flight once forwarded, through a +WPI, until the ACK; a -NAK ends it too; a
    connection's close ends its own; another consumer's deliveries are not the gate's."""
    gate = _gate(proxy)

    async def go() -> dict[str, Any]:
        nc, js = await _jetstream(proxy.url())
        await js.add_consumer("TASKS", durable_name="workers", ack_wait=30)
        for body in (b"t1", b"t2"):
            await js.publish("tasks.created", body)
        seen: dict[str, Any] = {"before": gate.delivery()}
        sub = await js.pull_subscribe("tasks.created", durable="workers", stream="TASKS")
        msg = (await sub.fetch(1, timeout=10))[0]
        seen["reply"], seen["fetched"] = msg.reply, gate.delivery()
        seen["other consumer"] = _gate(proxy, "$JS.ACK.TASKS.others.").delivery()
        await msg.in_progress()
        # a request after it (a PING may overtake a publish in the client's buffer): once its
        # answer is back, the proxy has seen the +WPI
        await js.stream_info("TASKS")
        seen["in progress"] = gate.delivery()
        await msg.ack_sync(timeout=10)
        seen["acked"] = gate.delivery()
        msg = (await sub.fetch(1, timeout=10))[0]
        seen["second"] = gate.delivery() == msg.reply
        await msg.nak()
        await js.stream_info("TASKS")
        seen["nak"] = gate.delivery()
        msg = (await sub.fetch(1, timeout=10))[0]  # the same task, delivered anew
        seen["again"] = gate.delivery() == msg.reply
        await nc.close()
        deadline = time.monotonic() + 10
        while gate.delivery() is not None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        seen["closed"] = gate.delivery()
        return seen

    seen = _run(go())
    assert seen["before"] is None
    assert seen["fetched"] == seen["reply"] and seen["reply"].startswith("$JS.ACK.TASKS.workers.")
    assert seen["other consumer"] is None
    assert seen["in progress"] == seen["reply"]  # +WPI ends nothing
    assert seen["acked"] is None
    assert seen["second"] and seen["nak"] is None and seen["again"]
    assert seen["closed"] is None
    mode = (proxy.journal.parent / FILE).stat().st_mode & 0o777
    assert mode == 0o600, oct(mode)
