"""The loss probe's receiver counts every datagram up to the sender's "end", even when the sender
stalls: on a loaded machine a sender left waiting 0.3 s once made a 30 % loss read as 91 %."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from chaos.cluster.net import _LOSS_RECV


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _received(bursts: list[range], stall: float, end: bool) -> tuple[int, float]:
    port = _free_port()
    recv = subprocess.Popen(
        [sys.executable, "-c", _LOSS_RECV, str(port), "20"], stdout=subprocess.PIPE, text=True
    )
    assert recv.stdout is not None
    assert recv.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for i, burst in enumerate(bursts):
            if i:
                time.sleep(stall)  # the sender descheduled between two datagrams
            for n in burst:
                s.sendto(str(n).encode(), ("127.0.0.1", port))
                time.sleep(0.001)
        if end:
            for _ in range(3):
                s.sendto(b"end", ("127.0.0.1", port))
    out, _ = recv.communicate(timeout=30)
    return int(json.loads(out.strip().splitlines()[-1])["received"]), time.monotonic() - t0


def test_a_stalled_sender_is_waited_for_until_its_end() -> None:
    got, _ = _received([range(0, 50), range(50, 100)], stall=1.0, end=True)
    assert got == 100


def test_without_any_end_the_receiver_stops_after_three_quiet_seconds() -> None:
    got, took = _received([range(0, 20)], stall=0.0, end=False)
    assert got == 20 and 3.0 <= took < 10.0, took
