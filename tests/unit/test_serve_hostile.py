"""``chaos serve`` facing a store the code under test wrote into, and clients that misbehave.

What the services wrote (``live/``, ``logs/``) is never HTML and never runs script in the
browser; silent connections are closed and do not pile up threads; zips are streamed; no answer
shows an absolute path of the serving machine.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.report.http_safety import SANDBOX_CSP
from chaos.report.serve import ReportServer, make_server

RUN = "lab3/20261130T101500-a1b2"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    run = root / RUN
    (run / "live" / "events").mkdir(parents=True)
    (run / "logs" / "n1").mkdir(parents=True)
    (run / "history.jsonl").write_text('{"format":"chaos.history","version":1}\n')
    (run / "spec.json").write_text(json.dumps({"workload": "lab3"}))
    (run / "live" / "events" / "x.html").write_text("<script>alert(document.cookie)</script>")
    (run / "live" / "events" / "n1-api.jsonl").write_text('{"kind": "<script>"}\n')
    (run / "logs" / "n1" / "api.log").write_text("\x1b[2J<script>alert(1)</script>\n")
    (run / "logs" / "n1" / "evil.svg").write_text('<svg onload="alert(1)"></svg>')
    (run / "plot.html").write_text("<script>alert(2)</script>")
    return root


@pytest.fixture
def server(store: Path) -> Iterator[ReportServer]:
    srv = make_server(store, port=0, quiet=True, request_timeout=1.0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def get(srv: ReportServer, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("live/events/x.html", "application/octet-stream"),
        ("live/events/n1-api.jsonl", "text/plain; charset=utf-8"),
        ("logs/n1/api.log", "text/plain; charset=utf-8"),
        ("logs/n1/evil.svg", "application/octet-stream"),
        ("plot.html", "application/octet-stream"),  # only the report is HTML
    ],
)
def test_what_services_wrote_is_text_or_a_download_in_a_sandbox(
    server: ReportServer, path: str, ctype: str
) -> None:
    status, headers, _ = get(server, f"/run/{RUN}/{path}")
    assert status == 200
    assert headers["content-type"] == ctype
    assert headers["content-security-policy"] == SANDBOX_CSP
    assert headers["x-content-type-options"] == "nosniff"
    if ctype == "application/octet-stream":
        assert headers["content-disposition"].startswith("attachment;")


def test_a_fifo_in_the_live_folder_does_not_hold_a_thread(
    server: ReportServer, store: Path
) -> None:
    import os

    os.mkfifo(store / RUN / "live" / "events" / "pipe.jsonl")
    t0 = time.monotonic()
    status, _, _ = get(server, f"/run/{RUN}/live/events/pipe.jsonl")
    assert status == 404 and time.monotonic() - t0 < 5


def _handlers() -> int:
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_silent_connections_are_closed_and_bounded(server: ReportServer) -> None:
    socks = []
    for _ in range(40):
        s = socket.create_connection(server.server_address[:2], timeout=5)
        s.send(b"GET / HTTP/1.1\r\n")  # half a request, then silence
        socks.append(s)
    deadline = time.monotonic() + 15
    while _handlers() < 30 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _handlers() >= 30, "the connections were not being served"
    # past the server's request timeout (1 s) they end; without it they would stay: waited for
    # with room for a loaded machine, not slept for a fixed time
    deadline = time.monotonic() + 15
    while _handlers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _handlers() == 0, "silent connections kept their threads"
    for s in socks:
        s.settimeout(1)
        assert s.recv(100) == b""  # closed by the server
        s.close()
    assert get(server, "/")[0] == 200


def test_connections_past_the_bound_are_closed_not_threaded(store: Path) -> None:
    srv = ReportServer(store, port=0, quiet=True, request_timeout=5.0, max_connections=4)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        socks = [socket.create_connection(srv.server_address[:2], timeout=5) for _ in range(10)]
        time.sleep(0.5)
        closed = 0
        for s in socks:
            s.settimeout(0.2)
            with contextlib.suppress(TimeoutError):  # still open: served, or waiting
                closed += s.recv(1) == b""
            s.close()
        assert closed >= 6
    finally:
        srv.shutdown()
        srv.server_close()


def test_zips_are_streamed_and_a_workload_folder_zips(server: ReportServer) -> None:
    status, headers, body = get(server, "/zip/lab3")
    assert status == 200 and "content-length" not in headers  # streamed, not built first
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert f"lab3/{RUN.split('/')[1]}/logs/n1/api.log" in names


def test_no_answer_shows_an_absolute_path(server: ReportServer, store: Path) -> None:
    root = str(store.resolve())
    for path in (
        "/",
        f"/run/{RUN}/" + "a" * 5000,  # a name too long answered 500 with the absolute path
        f"/run/{RUN}/nope.json",
        "/zip/" + "b" * 5000,
    ):
        status, _, body = get(server, path)
        assert status in (200, 404), (path, status)
        assert root.encode() not in body, path


def test_an_internal_error_answers_without_the_path(
    server: ReportServer, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaos.report import page

    def boom(run_dir: Path, *_: object) -> Path:
        raise RuntimeError(f"cannot render {run_dir.resolve()}")

    monkeypatch.setattr(page, "render", boom)
    status, _, body = get(server, f"/run/{RUN}/")
    assert status == 500 and b"cannot render" in body
    assert str(store.resolve()).encode() not in body
