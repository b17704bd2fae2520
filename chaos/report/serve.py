"""``chaos serve``: browse a store of runs from a browser.

Routes::

    /                      the runs, newest first
    /run/<test>/<id>/      the run's report (rendered on demand when absent or stale)
    /run/<test>/<id>/<f>   any file of the run (plots, history.jsonl, ...)
    /zip/<test>/<id>       the whole run as a zip

The server binds to 127.0.0.1 unless told otherwise and answers only for paths inside the store:
``..`` segments, absolute paths and symlinks that resolve outside it are refused, after URL
decoding, because a report server on a course machine must not become a file server.
"""

from __future__ import annotations

import errno
import io
import json
import os
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from chaos.histories.files import open_regular, read_regular
from chaos.histories.limits import MAX_INPUT_BYTES
from chaos.histories.store import faults_of, workload_of
from chaos.report.contrib import ContributorsFor, no_contributors
from chaos.report.defaults import DEFAULT_HOST, DEFAULT_PORT
from chaos.report.html import as_text, e
from chaos.report.http_safety import answer_for, public_error
from chaos.report.loading import REPORT_NAME
from chaos.report.zipstream import write_zip

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Refused(Exception):
    def __init__(self, status: HTTPStatus, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEntry:
    rel: str  # "<test>/<run-id>", relative to the store
    path: Path
    spec: dict[str, Any]
    verdict: str
    started: float  # seconds since the epoch


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(read_regular(path, MAX_INPUT_BYTES))  # no FIFO, no link, bounded
    except (OSError, ValueError, RecursionError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _started(name: str, fallback: float) -> float:
    # Run ids begin with their start time (store.new_run_dir); a copied store keeps its names but
    # not its mtimes, so the name wins when it carries a stamp.
    try:
        return time.mktime(time.strptime(name[:15], "%Y%m%dT%H%M%S"))
    except ValueError:
        return fallback


def list_runs(store: Path) -> list[RunEntry]:
    """Every run folder two levels down (``<test>/<run-id>``), newest first. The ``latest``
    links are skipped: they name a run that is already listed."""
    runs: list[RunEntry] = []
    if not store.is_dir():
        return runs
    for test in sorted(store.iterdir()):
        if test.is_symlink() or not test.is_dir():
            continue
        for run in test.iterdir():
            if run.is_symlink() or not run.is_dir():
                continue
            if not any((run / f).exists() for f in ("spec.json", "history.jsonl")):
                continue
            spec = _read(run / "spec.json")
            verdict = _read(run / "results.json").get("verdict") or "unchecked"
            stamps = [
                p.stat().st_mtime
                for p in (run / "spec.json", run / "history.jsonl", run)
                if p.exists()
            ]
            runs.append(
                RunEntry(
                    rel=f"{test.name}/{run.name}",
                    path=run,
                    spec=spec,
                    verdict=str(verdict),
                    started=_started(run.name, min(stamps)),
                )
            )
    runs.sort(key=lambda r: (r.started, r.rel), reverse=True)
    return runs


def resolve_inside(store: Path, rel: str) -> Path:
    """The path ``rel`` (already URL-decoded) names inside ``store``, or :class:`Refused`."""
    if "\x00" in rel or "\\" in rel or rel.startswith("/"):
        raise Refused(HTTPStatus.NOT_FOUND, "not a path in the store")
    parts = [p for p in rel.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise Refused(HTTPStatus.NOT_FOUND, "not a path in the store")
    root = store.resolve()
    target = root.joinpath(*parts).resolve()
    # A symlink may still point outside: what counts is where the path resolves.
    if target != root and root not in target.parents:
        raise Refused(HTTPStatus.FORBIDDEN, "outside the store")
    return target


def needs_render(run_dir: Path) -> bool:
    report = run_dir / REPORT_NAME
    if not report.exists():
        return True
    inputs = [run_dir / f for f in ("results.json", "history.jsonl", "events.jsonl", "spec.json")]
    newest = max((p.stat().st_mtime for p in inputs if p.exists()), default=0.0)
    return report.stat().st_mtime < newest


def zip_run(run_dir: Path) -> bytes:
    """The run as zip bytes (tests; the server streams with :func:`write_zip`)."""
    buf = io.BytesIO()
    write_zip(run_dir, buf)
    return buf.getvalue()


VERDICT_COLOURS = {"valid": "#2e7d32", "invalid": "#c62828", "unknown": "#b26a00"}


def index_page(store: Path) -> str:
    runs = list_runs(store)
    rows = []
    for r in runs:
        colour = VERDICT_COLOURS.get(r.verdict, "#777")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        link = quote(r.rel)
        cells = [
            f'<span class="pill" style="background:{colour}">{e(r.verdict)}</span>',
            f'<a href="/run/{link}/">{e(r.rel)}</a>',
            e(workload_of(r.spec)),
            e(as_text(r.spec.get("solution"))),
            e(faults_of(r.spec) or "none"),
            e(as_text(r.spec.get("seed"))),
            e(when),
            f'<a href="/zip/{link}">zip</a>',
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(
        f"<th>{h}</th>"
        for h in ("verdict", "run", "workload", "solution", "fault", "seed", "time", "")
    )
    body = "".join(rows) or '<tr><td colspan="8">No runs in this store yet.</td></tr>'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>chaos runs</title>'
        "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#1d232b}"
        "table{border-collapse:collapse}td,th{border:1px solid #d9dee5;padding:4px 10px;"
        "text-align:left}th{background:#f0f3f7}.pill{color:#fff;border-radius:10px;"
        "padding:0 8px;font-weight:600;font-size:12px}</style></head><body>"
        f"<h1>chaos runs</h1><p>store <code>{e(store.resolve().name)}</code> · {len(runs)} run(s), "
        f"newest first</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        "</body></html>"
    )


class _Handler(BaseHTTPRequestHandler):
    server: ReportServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        # seconds a connection may stay silent (headers, or idle between keep-alive requests)
        # before it is closed: without it, 300 half-open connections hold 300 threads for ever
        super().setup()
        self.connection.settimeout(self.server.request_timeout)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    def _send(
        self, status: HTTPStatus, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, why: str) -> None:
        page = (
            f"<!DOCTYPE html><title>{status.value}</title>"
            f"<p>{status.value} {e(status.phrase)}: {e(why)}</p>"
        )
        self._send(status, page.encode(), "text/html; charset=utf-8")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        try:
            self._answer()
        except Exception as x:  # a broken run must not take the server (or its client) down
            self.log_error("%s: %s", self.path, x)  # the full story stays on the server's side
            root = self.server.store
            why = public_error(x, str(root.resolve()), str(root.absolute()))
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, why)

    def _answer(self) -> None:
        try:
            self._route()
        except Refused as x:
            self._error(x.status, str(x))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except OSError as x:
            if x.errno not in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOENT, errno.ENOTDIR):
                raise
            # a path the file system will not look up: nothing to serve, nothing to tell
            self._error(HTTPStatus.NOT_FOUND, "no such file")

    def _host_ok(self) -> bool:
        # Bound to loopback, answer only to loopback names: a web page elsewhere must not read
        # the store through DNS rebinding.
        if self.server.server_address[0] not in ("127.0.0.1", "::1"):
            return True
        host = (self.headers.get("Host") or "").strip()
        if not host:
            return True
        name = host[1:].split("]")[0] if host.startswith("[") else host.split(":")[0]
        return name in LOOPBACK

    def _route(self) -> None:
        if not self._host_ok():
            raise Refused(HTTPStatus.FORBIDDEN, "host not allowed")
        path = unquote(urlsplit(self.path).path)
        store = self.server.store
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, index_page(store).encode(), "text/html; charset=utf-8")
            return
        for prefix in ("/run/", "/zip/"):
            if path.startswith(prefix):
                break
        else:
            raise Refused(HTTPStatus.NOT_FOUND, "no such page")
        rel = path[len(prefix) :]
        try:
            target = resolve_inside(store, rel)
        except OSError:  # a name too long, a loop of links: nothing to serve, nothing to tell
            raise Refused(HTTPStatus.NOT_FOUND, "no such file") from None
        if prefix == "/zip/":
            self._zip(target)
        elif target.is_dir():
            if not path.endswith("/"):
                self._send(
                    HTTPStatus.MOVED_PERMANENTLY, b"", "text/plain", {"Location": quote(path) + "/"}
                )
                return
            self._report(target)
        elif target.name == REPORT_NAME:
            self._report(target.parent)
        elif target.is_file():
            self._file(target)
        else:
            raise Refused(HTTPStatus.NOT_FOUND, "no such file")

    def _report(self, run_dir: Path) -> None:
        if not run_dir.is_dir() or not any(
            (run_dir / f).exists() for f in ("spec.json", "history.jsonl")
        ):
            raise Refused(HTTPStatus.NOT_FOUND, "not a run")
        with self.server.render_lock:
            if needs_render(run_dir):
                # imported on first use: the page pulls in numpy, which `chaos serve`'s start and
                # every other command importing this module need not pay for
                from chaos.report.page import render

                render(run_dir, self.server.contributors_for)
        self._send(HTTPStatus.OK, (run_dir / REPORT_NAME).read_bytes(), "text/html; charset=utf-8")

    def _file(self, target: Path) -> None:
        """A file of a run, streamed, typed by :func:`answer_for` (never HTML)."""
        root = self.server.store.resolve()
        rel = PurePosixPath(*target.relative_to(root).parts)
        # <test>/<run-id>/<path in the run>
        answer = answer_for(PurePosixPath(*rel.parts[2:]) if len(rel.parts) > 2 else rel)
        try:
            fd = open_regular(target)
        except OSError:  # a FIFO or a device must not hold a server thread
            raise Refused(HTTPStatus.NOT_FOUND, "not a regular file") from None
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(size))
            self.send_header("X-Content-Type-Options", "nosniff")
            for k, v in answer.headers:
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD":
                return
            left = size
            while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
                self.wfile.write(chunk)
                left -= len(chunk)

    def _zip(self, run_dir: Path) -> None:
        if not run_dir.is_dir() or run_dir == self.server.store.resolve():
            raise Refused(HTTPStatus.NOT_FOUND, "not a run")
        name = "".join(c for c in run_dir.name if c.isalnum() or c in "._-")[:100] or "run"
        # streamed as it is written: no length is known, so the connection ends the body
        self.close_connection = True
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Disposition", f'attachment; filename="{name}.zip"')
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            write_zip(run_dir, self.wfile)  # type: ignore[arg-type]


# Connections served at once; more are closed at once. Each holds a thread until it is answered
# or falls silent for REQUEST_TIMEOUT seconds, so a flood of silent connections holds at most
# this many threads, for that long.
MAX_CONNECTIONS = 128
REQUEST_TIMEOUT = 10.0


class ReportServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst of tabs is not refused by the kernel

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def __init__(
        self,
        store: Path,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        quiet: bool = False,
        contributors_for: ContributorsFor = no_contributors,
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.store = store
        self.quiet = quiet
        self.contributors_for = contributors_for
        self.request_timeout = request_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        # Rendering writes report.html and plots/; one at a time keeps two tabs from racing.
        self.render_lock = threading.Lock()
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}/"


def make_server(
    store: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    quiet: bool = False,
    contributors_for: ContributorsFor = no_contributors,
    request_timeout: float = REQUEST_TIMEOUT,
) -> ReportServer:
    """A server over ``store``; ``contributors_for`` gives each run's workload sections."""
    return ReportServer(
        store,
        host,
        port,
        quiet=quiet,
        contributors_for=contributors_for,
        request_timeout=request_timeout,
    )


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ReportServer",
    "list_runs",
    "make_server",
    "resolve_inside",
]
