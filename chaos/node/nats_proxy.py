"""Broker points: a root-owned NATS proxy in front of the broker, on each node.

The lab services of a node reach the broker only through this proxy (``127.0.0.1:PORT`` of their
own node; a firewall rule keeps the service user off the broker's port, see
chaos.workloads.systems.nats_proxy). It forwards the NATS client protocol byte for byte and reads
only where each frame ends: a control line (``PUB``/``HPUB``/``MSG``/``HMSG`` with their byte
counts, ``CONNECT``, ``INFO``, ``PING``, ``+OK`` ...) and the payload the counts announce. Nothing
is rewritten: authentication, headers and every option the client and the server agree on pass
as they were sent. A client that opens TLS (its first byte a TLS handshake) is forwarded as raw
bytes from there, with no point (journaled; chaos's broker offers no TLS).

Points (chaos.node.proxy_points; armed by the orchestrator through ``control/write-point``, a
root-only file, with ``op`` one of these and ``keys`` the subject prefixes of the group):

- ``publish`` ``before``: a ``PUB``/``HPUB`` to a subject of the group, held before the server
  gets it (every later frame of that connection waits behind it); ``after``: forwarded, then the
  server's answers to that connection are held (the publish's ACK among them).
- ``ack`` ``before``/``after``: the same for a final acknowledgement (``+ACK``, ``+NXT``,
  ``+TERM`` or an empty body) published to a ``$JS.ACK.`` subject of the group; ``-NAK`` and
  ``+WPI`` do not end a delivery and are no point.
- ``delivery`` ``after``: a ``MSG``/``HMSG`` whose reply subject is an ACK subject of the group
  (JetStream delivered it; the worker has not got it yet), held before the client gets it.

The proxy also keeps the node's deliveries in flight (chaos.node.deliveries): each ``MSG``/``HMSG``
with an ACK subject as its reply, from the moment it is forwarded to the client until the client
ends it (any answer on that subject but ``+WPI``) or its connection closes, in a root-only file the
node's etcd proxy reads before a read point gated on it fires.

Each firing notes the client's TCP port in ``fired-<gen>`` (and the shared claims folder) for the
host to find the process that holds the connection; the release says whether the held frame goes
on (``forward``) or is dropped with the connection (its sender was killed). To the code under test
a held frame is a slow network; nothing it can read says a point is armed. The proxy journals
what it held, dropped or refused to ``journal.jsonl`` beside the control folder (root's).

Runs on the nodes, as root: standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass

from chaos.node import deliveries, proxy_points
from chaos.node.proxy_points import HOLD_LIMIT, Held, Journal, Match, WritePoints

CRLF = b"\r\n"
# a control line longer than this is not NATS (the server's own limit is 4 KiB by default)
MAX_LINE = 64 << 10
# a payload larger than this is not NATS (the server's max_payload tops out at 64 MiB)
MAX_PAYLOAD = 64 << 20
READ = 64 << 10
TLS_HANDSHAKE = 0x16
# the bodies that end a JetStream delivery (an empty body is an ACK too)
FINAL_ACKS = (b"+ACK", b"+NXT", b"+TERM")
ACK_PREFIX = "$JS.ACK."


class FrameError(ValueError):
    """Bytes that are no NATS frame: a line too long, a byte count that is no number, a payload
    not followed by CRLF."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One protocol frame: its op (upper case), the control line's words, and every byte of it
    as it came (``raw``: forwarded unchanged). ``payload``: what follows the line (headers and
    body for ``HPUB``/``HMSG``), without the closing CRLF; ``headers``: the headers' length."""

    op: str
    args: tuple[str, ...]
    raw: bytes
    payload: bytes = b""
    headers: int = 0

    @property
    def subject(self) -> str:
        return self.args[0] if self.args else ""

    @property
    def reply(self) -> str | None:
        """The reply subject: ``PUB subj [reply] n``, ``HPUB subj [reply] h n``, ``MSG subj sid
        [reply] n``, ``HMSG subj sid [reply] h n``."""
        fixed = {"PUB": 2, "HPUB": 3, "MSG": 3, "HMSG": 4}.get(self.op)
        if fixed is None or len(self.args) != fixed + 1:
            return None
        return self.args[1] if self.op in ("PUB", "HPUB") else self.args[2]

    @property
    def body(self) -> bytes:
        return self.payload[self.headers :]


def _sizes(op: str, args: list[str]) -> tuple[int, int] | None:
    """(headers, total) bytes that follow a control line, or None for an op with no payload."""
    if op in ("PUB", "MSG"):
        if len(args) < (2 if op == "PUB" else 3):
            raise FrameError(f"{op} without its byte count")
        return 0, _count(args[-1])
    if op in ("HPUB", "HMSG"):
        if len(args) < (3 if op == "HPUB" else 4):
            raise FrameError(f"{op} without its byte counts")
        headers, total = _count(args[-2]), _count(args[-1])
        if headers > total:
            raise FrameError(f"{op} headers longer than the message")
        return headers, total
    return None


def _count(word: str) -> int:
    if not word.isdigit() or int(word) > MAX_PAYLOAD:
        raise FrameError(f"byte count {word[:20]!r}")
    return int(word)


class Framer:
    """Cuts one direction's bytes into frames: :meth:`feed` takes what arrived and returns the
    frames now whole; a frame split across reads waits for its rest."""

    def __init__(self) -> None:
        self._buf = bytearray()
        # a control line read whose payload has not all arrived: (op, args, line end, sizes)
        self._pending: tuple[str, tuple[str, ...], int, int, int] | None = None

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        return list(self._frames())

    def rest(self) -> bytes:
        """The bytes not yet part of a whole frame (handed on when the stream turns raw)."""
        out = bytes(self._buf)
        self._buf.clear()
        self._pending = None
        return out

    def _frames(self) -> Iterator[Frame]:
        while True:
            if self._pending is None:
                end = self._buf.find(CRLF, 0, MAX_LINE + 2)
                if end < 0:
                    if len(self._buf) > MAX_LINE:
                        raise FrameError(f"a control line longer than {MAX_LINE} bytes")
                    return
                words = bytes(self._buf[:end]).decode("latin-1").split()
                op = words[0].upper() if words else ""
                sizes = _sizes(op, words[1:])
                if sizes is None:
                    raw = bytes(self._buf[: end + 2])
                    del self._buf[: end + 2]
                    yield Frame(op, tuple(words[1:]), raw)
                    continue
                self._pending = (op, tuple(words[1:]), end + 2, *sizes)
            op, args, start, headers, total = self._pending
            need = start + total + 2
            if len(self._buf) < need:
                return
            if self._buf[need - 2 : need] != CRLF:
                raise FrameError(f"{op}'s payload is not followed by CRLF")
            raw = bytes(self._buf[:need])
            del self._buf[:need]
            self._pending = None
            yield Frame(op, args, raw, raw[start : start + total], headers)


def is_final_ack(frame: Frame) -> bool:
    """A publish that ends a JetStream delivery (chaos.workloads.systems.nats_auth lets the
    services publish ``$JS.ACK.<stream>.<consumer>.>``)."""
    if frame.op not in ("PUB", "HPUB") or not frame.subject.startswith(ACK_PREFIX):
        return False
    body = frame.body.strip()
    return body == b"" or body.startswith(FINAL_ACKS)


def ends_delivery(frame: Frame) -> bool:
    """A publish that ends a delivery for the in-flight record (chaos.node.deliveries): any answer
    on its ACK subject but ``+WPI`` (a ``-NAK`` ends it too: the broker delivers it again, anew)."""
    if frame.op not in ("PUB", "HPUB") or not frame.subject.startswith(ACK_PREFIX):
        return False
    return not frame.body.strip().startswith(b"+WPI")


def is_delivery(frame: Frame) -> bool:
    """A message JetStream delivered for a consumer: its reply subject is the ACK subject."""
    reply = frame.reply
    return frame.op in ("MSG", "HMSG") and reply is not None and reply.startswith(ACK_PREFIX)


class Dropped(Exception):
    """The held frame's sender was killed: the frame and the connection go."""


class Connection:
    """One client's connection and its upstream one, each direction pumped frame by frame."""

    def __init__(
        self,
        proxy: Proxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self.proxy = proxy
        self.client, self.server = client, server
        host, port = client[1].get_extra_info("peername")[:2]
        self.peer = f"ipv4:{host}:{port}"
        self.port = int(port)
        # closed while an ``after`` point holds the server's answers to this client
        self.open = asyncio.Event()
        self.open.set()
        self.tls = False  # the client opened TLS: both directions are raw bytes from then on

    async def run(self) -> None:
        tasks = [asyncio.create_task(_ended(self._upward())),
                 asyncio.create_task(_ended(self._downward()))]  # fmt: skip
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            for _, w in (self.client, self.server):
                w.close()
            self.proxy.in_flight.closed(self.port)

    async def _upward(self) -> None:
        """The client's frames to the server; a publish or an ACK may be held on the way."""
        reader, out = self.client[0], self.server[1]
        framer = Framer()
        first = True
        while data := await reader.read(READ):
            if first and data[0] == TLS_HANDSHAKE:
                self.tls = True
                self.proxy.note("raw", self.port, reason="the client opened TLS: not parsed")
                await _raw(reader, out, data, self.open)
                return
            first = False
            try:
                frames = framer.feed(data)
            except FrameError as e:
                self.proxy.note("refused", self.port, reason=f"client: {e}")
                return
            for frame in frames:
                if ends_delivery(frame):
                    self.proxy.in_flight.ended(frame.subject)
                op = _client_op(frame)
                if op is None:
                    out.write(frame.raw)
                    continue
                await self._hold_up(op, frame, out)
            await out.drain()

    async def _hold_up(self, op: str, frame: Frame, out: asyncio.StreamWriter) -> None:
        keys = [frame.subject]
        found = self.proxy.points.match(op, "before", keys)
        if found is not None:
            await self._held(found, frame)  # raises Dropped: the frame never leaves
        after = self.proxy.points.match(op, "after", keys)
        if after is not None:
            self.open.clear()  # the server's answer to it waits with the client's next frames
        out.write(frame.raw)
        await out.drain()
        if after is not None:
            try:
                await self._held(after, frame)
            finally:
                self.open.set()

    async def _held(self, found: Match, frame: Frame) -> None:
        held = self.proxy.points.fire(found, self.peer)
        if held is None:
            return
        got = await self.proxy.hold(held, found, frame, self.port)
        if got.get("forward") is False:
            raise Dropped(found.gen)

    async def _downward(self) -> None:
        """The server's frames to the client; a delivery may be held before the client gets it."""
        reader, out = self.server[0], self.client[1]
        framer = Framer()
        while data := await reader.read(READ):
            if self.tls:
                await _raw(reader, out, framer.rest() + data, self.open)
                return
            try:
                frames = framer.feed(data)
            except FrameError as e:
                self.proxy.note("raw", self.port, reason=f"server: {e}: not parsed from here")
                await _raw(reader, out, framer.rest(), self.open)
                return
            for frame in frames:
                if is_delivery(frame):
                    reply = frame.reply or ""
                    found = self.proxy.points.match("delivery", "after", [reply])
                    if found is not None:
                        await out.drain()
                        await self._held(found, frame)
                await self.open.wait()
                if is_delivery(frame):
                    # said before the client can have it: its first read is made in flight
                    self.proxy.in_flight.delivered(frame.reply or "", self.port)
                out.write(frame.raw)
            await out.drain()


def _client_op(frame: Frame) -> str | None:
    """The point a client frame may be: ``ack`` (a final ACK), ``publish`` (any other publish),
    or None."""
    if frame.op not in ("PUB", "HPUB"):
        return None
    return "ack" if is_final_ack(frame) else "publish"


async def _ended(pump: Coroutine[None, None, None]) -> None:
    """One direction's pump, ended by a dropped frame or a closed socket alike."""
    with contextlib.suppress(Dropped, ConnectionError):
        await pump


async def _raw(
    reader: asyncio.StreamReader, out: asyncio.StreamWriter, first: bytes, gate: asyncio.Event
) -> None:
    await gate.wait()
    out.write(first)
    while data := await reader.read(READ):
        out.write(data)
        await out.drain()


class Proxy:
    """Every node's one proxy: its points, its journal, its connections."""

    def __init__(
        self,
        upstream: tuple[str, int],
        points: WritePoints,
        journal: Journal,
        in_flight: deliveries.InFlight,
    ) -> None:
        self.upstream = upstream
        self.points = points
        self.journal = journal
        self.in_flight = in_flight

    def note(self, outcome: str, port: int, **extra: object) -> None:
        self.journal.write({"outcome": outcome, "port": port, "mono": time.monotonic(),
                            "wall": time.time(), **extra})  # fmt: skip

    async def hold(self, held: Held, found: Match, frame: Frame, port: int) -> dict[str, object]:
        what = {"gen": held.gen, "op": found.op, "moment": found.moment, "subject": frame.subject}
        self.note("held", port, **what)
        got = await asyncio.to_thread(self.points.wait, held, HOLD_LIMIT)
        gone = got.get("forward") is False
        self.note("dropped" if gone else "released", port, **what)
        return got

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up = await asyncio.open_connection(*self.upstream)
        except OSError as e:
            self.note("error", writer.get_extra_info("peername")[1], reason=f"upstream: {e}")
            writer.close()
            return
        await Connection(self, (reader, writer), up).run()


async def listen(proxy: Proxy, host: str, port: int) -> asyncio.Server:
    """The proxy's listening socket (``port`` 0: any free one)."""
    return await asyncio.start_server(proxy.serve, host, port, limit=MAX_LINE)


async def _main(address: tuple[str, int], upstream: tuple[str, int], proxy: Proxy) -> None:
    server = await listen(proxy, *address)
    listen_host, listen_port = address
    print(f"nats proxy: {listen_host}:{listen_port} -> {upstream[0]}:{upstream[1]}", flush=True)
    async with server:
        await server.serve_forever()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main() -> None:
    p = proxy_points.arguments("chaos.node.nats_proxy")
    a = p.parse_args()
    os.umask(0o077)
    control = a.state / "control"
    control.mkdir(parents=True, exist_ok=True)
    os.chmod(a.state, 0o700)
    os.chmod(control, 0o700)
    proxy = Proxy(
        _address(a.upstream),
        WritePoints(control, a.node, a.claims),
        Journal(a.state / "journal.jsonl", a.node),
        deliveries.InFlight(a.state / deliveries.FILE),
    )
    asyncio.run(_main(_address(a.listen), _address(a.upstream), proxy))


if __name__ == "__main__":
    main()
