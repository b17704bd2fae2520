"""``chaos serve``: lists runs, serves reports, zips runs, refuses anything outside the store."""

from __future__ import annotations

import http.client
import io
import os
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.cli.report import serve_command
from chaos.report.serve import ReportServer, make_server
from chaos.workloads.lab1.report import UnsafeLeaseSection
from chaos.workloads.lab3.report import LabReportSection
from tests.fixtures import synthetic_runs as runs


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve") / "store"
    runs.all_runs(root)
    (root / "lab3" / "latest").symlink_to((root / "lab3" / "20261129T102000-c3d4").resolve())
    (root / "lab3" / "escape").symlink_to("/etc")
    secret = root.parent / "secret.txt"
    secret.write_text("top secret\n")
    (root / "lab3" / "20261129T101500-a1b2" / "leak.txt").symlink_to(secret)
    return root


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[ReportServer]:
    # as chaos serve does: each run's workload adds its own sections
    sections = {"lab1": [UnsafeLeaseSection()], "lab3": [LabReportSection()]}
    srv = make_server(store, port=0, quiet=True, contributors_for=lambda n: sections.get(n, []))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def get(srv: ReportServer, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=30)
    # skip_host + an explicit header lets a test send the Host a rebinding attack would send;
    # http.client sends the path byte for byte, so "../" reaches the server unnormalised.
    conn.putrequest("GET", path, skip_host=host is not None)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def test_binds_to_localhost_by_default(server: ReportServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    host = next(p for p in serve_command.params if p.name == "host")
    assert host.default == "127.0.0.1"


def test_lists_runs_newest_first_with_verdicts(server: ReportServer) -> None:
    status, headers, body = get(server, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    page = body.decode()
    order = [
        page.index(name)
        for name in (
            "lab3/20261129T104000-dead",
            "lab1/20261129T103000-e5f6",
            "lab3/20261129T102000-c3d4",
            "lab3/20261129T101500-a1b2",
        )
    ]
    assert order == sorted(order)
    assert "latest" not in page and "escape" not in page
    assert page.count(">invalid</span>") == 2 and ">valid</span>" in page
    assert ">unchecked</span>" in page
    assert "check_then_act" in page and "reference" in page and "pause" in page


@pytest.mark.usefixtures("no_plots")  # about when pages render, not plots
def test_serves_a_report_rendering_on_demand(server: ReportServer, store: Path) -> None:
    run_dir = store / "lab3" / "20261129T102000-c3d4"
    assert not (run_dir / "report.html").exists()
    status, headers, body = get(server, "/run/lab3/20261129T102000-c3d4/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert "task t7: counter incremented twice" in body.decode()
    assert '<section id="lab-report">' in body.decode()
    assert (run_dir / "report.html").exists()
    status, _, _ = get(server, "/run/lab3/20261129T102000-c3d4")
    assert status == 301


@pytest.mark.usefixtures("no_plots")  # about when pages render, not plots
def test_rerenders_when_results_are_newer(server: ReportServer, store: Path) -> None:
    run_dir = store / "lab3" / "20261129T101500-a1b2"
    get(server, "/run/lab3/20261129T101500-a1b2/report.html")
    report = run_dir / "report.html"
    old = time.time() - 100
    os.utime(report, (old, old))
    before = report.stat().st_mtime
    get(server, "/run/lab3/20261129T101500-a1b2/report.html")
    assert report.stat().st_mtime > before
    # Not stale any more: served as is.
    stamp = report.stat().st_mtime
    get(server, "/run/lab3/20261129T101500-a1b2/")
    assert report.stat().st_mtime == stamp


def test_serves_run_files_and_a_zip(server: ReportServer, store: Path) -> None:
    # a render of its own, with the plots (an earlier test may have rendered it without)
    (store / "lab3" / "20261129T102000-c3d4" / "report.html").unlink(missing_ok=True)
    get(server, "/run/lab3/20261129T102000-c3d4/")
    status, headers, body = get(server, "/run/lab3/20261129T102000-c3d4/plots/latency-raw.png")
    assert status == 200 and headers["content-type"] == "image/png"
    assert body.startswith(b"\x89PNG")
    status, headers, body = get(server, "/zip/lab3/20261129T102000-c3d4")
    assert status == 200 and headers["content-type"] == "application/zip"
    assert 'filename="20261129T102000-c3d4.zip"' in headers["content-disposition"]
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert "20261129T102000-c3d4/history.jsonl" in names
    assert "20261129T102000-c3d4/results.json" in names


def test_zip_leaves_out_symlinks(server: ReportServer) -> None:
    status, _, body = get(server, "/zip/lab3/20261129T101500-a1b2")
    assert status == 200
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert not any(n.endswith("leak.txt") for n in names)
    assert b"top secret" not in body


def test_latest_link_inside_the_store_works(server: ReportServer) -> None:
    status, _, body = get(server, "/run/lab3/latest/")
    assert status == 200 and b"task t7" in body


UP = 16  # deeper than any temporary store, so that an unchecked path would reach /etc/passwd


@pytest.mark.parametrize(
    "path",
    [
        "/run/" + "../" * UP + "etc/passwd",
        "/run/lab3/" + "../" * UP + "etc/passwd",
        "/run/" + "%2e%2e/" * UP + "etc/passwd",
        "/run/lab3/" + "..%2f" * UP + "etc%2fpasswd",
        "/run/" + "%2E%2E%2F" * UP + "etc%2Fpasswd",
        "/zip/..",
        "/zip/%2e%2e/%2e%2e",
        "/run//etc/passwd",
        "/run/%2fetc%2fpasswd",
        "/run/lab3" + "%5c.." * UP + "%5cetc%5cpasswd",
        "/run/lab3/%00",
    ],
)
def test_refuses_traversal(server: ReportServer, path: str) -> None:
    status, _, body = get(server, path)
    assert status in (403, 404)
    assert b"root:" not in body


def test_refuses_symlinks_that_escape_the_store(server: ReportServer) -> None:
    status, _, body = get(server, "/run/lab3/escape/passwd")
    assert status == 403 and b"root:" not in body
    status, _, body = get(server, "/run/lab3/20261129T101500-a1b2/leak.txt")
    assert status == 403 and b"top secret" not in body
    status, _, _ = get(server, "/zip/lab3/escape")
    assert status == 403


def test_refuses_foreign_host_names(server: ReportServer) -> None:
    status, _, _ = get(server, "/", host="evil.example:8000")
    assert status == 403
    port = server.server_address[1]
    assert get(server, "/", host=f"localhost:{port}")[0] == 200


def test_unknown_pages_are_404(server: ReportServer) -> None:
    assert get(server, "/etc/passwd")[0] == 404
    assert get(server, "/run/lab3/nope/")[0] == 404
    assert get(server, "/run/lab3/")[0] == 404  # a test folder is not a run


def test_a_run_that_cannot_be_rendered_is_a_500_not_a_hang(
    server: ReportServer, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaos.report import page

    def boom(_: Path, *__: object) -> Path:
        raise OSError("read-only file system")

    monkeypatch.setattr(page, "render", boom)
    run_dir = store / "lab1" / "20261129T103000-e5f6"
    (run_dir / "report.html").unlink(missing_ok=True)
    status, _, body = get(server, "/run/lab1/20261129T103000-e5f6/")
    assert status == 500 and b"read-only file system" in body
    assert get(server, "/")[0] == 200  # and the server still answers
