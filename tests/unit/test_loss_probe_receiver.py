"""The loss probe's receiver counts every datagram of its own probe up to the sender's "end", even
when the sender stalls (on a loaded machine a sender left waiting 0.3 s once made a 30 % loss read
as 91 %), and nothing else: a node's code that sends numbered datagrams to the probe's port
cannot make a loss look smaller."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable

from chaos.cluster.net import _LOSS_RECV

TOKEN = "5eed5eed5eed5eed"
SENDER = "127.0.0.1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _received(
    bursts: list[range],
    stall: float,
    end: bool,
    meddle: Callable[[int], None] = lambda port: None,
) -> tuple[int, float]:
    port = _free_port()
    recv = subprocess.Popen(
        [sys.executable, "-c", _LOSS_RECV, str(port), "20", TOKEN, SENDER, "100"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert recv.stdout is not None
    assert recv.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((SENDER, 0))
        for i, burst in enumerate(bursts):
            if i:
                time.sleep(stall)  # the sender descheduled between two datagrams
            for n in burst:
                s.sendto(f"{TOKEN} {n}".encode(), ("127.0.0.1", port))
                time.sleep(0.001)
        meddle(port)
        if end:
            for _ in range(3):
                s.sendto(f"{TOKEN} end".encode(), ("127.0.0.1", port))
    out, _ = recv.communicate(timeout=30)
    return int(json.loads(out.strip().splitlines()[-1])["received"]), time.monotonic() - t0


def test_a_stalled_sender_is_waited_for_until_its_end() -> None:
    got, _ = _received([range(0, 50), range(50, 100)], stall=1.0, end=True)
    assert got == 100


def test_without_any_end_the_receiver_stops_after_three_quiet_seconds() -> None:
    got, took = _received([range(0, 20)], stall=0.0, end=False)
    assert got == 20 and 3.0 <= took < 10.0, took


def test_datagrams_not_of_the_probe_are_not_counted() -> None:
    """The attack: every number the probe could send, sent by code that does not know the token,
    or from another address, or past the probe's count; and an "end" without the token, which
    must not cut the count short."""

    def meddle(port: int) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.2", 0))  # another address of the machine: another node
            for n in range(100):
                s.sendto(f"{TOKEN} {n}".encode(), ("127.0.0.1", port))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((SENDER, 0))  # the sender's own address, without the token
            s.sendto(b"end", ("127.0.0.1", port))
            for n in range(100):
                s.sendto(str(n).encode(), ("127.0.0.1", port))
                s.sendto(f"{TOKEN[::-1]} {n}".encode(), ("127.0.0.1", port))
                s.sendto(f"{TOKEN} {n + 100}".encode(), ("127.0.0.1", port))
            s.sendto(b"\xff\xfe garbage", ("127.0.0.1", port))

    got, _ = _received([range(0, 30), range(70, 100)], stall=0.0, end=True, meddle=meddle)
    assert got == 60
    # the control: the same numbers with the token, from the sender's address, are counted
    got, _ = _received([range(0, 30), range(70, 100), range(30, 70)], stall=0.0, end=True)
    assert got == 100
