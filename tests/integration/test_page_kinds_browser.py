"""Every kind of page in headless Chromium, read as an instructor reads it (issue 22).

lab3 and lab1, valid and invalid, the class report and ``chaos serve``'s index: no red anomaly
card under a VALID verdict, no ``{"`` of raw JSON in the visible text, no element wider than the
viewport or than its card, and every link resolves (a file next to the page, an element of the
page, or a 200 from the server). A probe appended to a copy of the page measures the laid-out DOM and writes
what it found into an element that ``--dump-dom`` hands back.

Needs only the ``chromium`` package, like test_report_browser.py; not integration-marked.
"""

from __future__ import annotations

import html
import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

import pytest

from chaos.cli.report import report_contributors as _report_contributors
from chaos.report.serve import ReportServer, index_page, make_server
from tests.fixtures import page_kinds
from tests.integration.test_report_browser import _run

WIDTH = 1280
PROBE = """
<script>
(function () {
  var out = {}, W = window.innerWidth;
  var v = document.querySelector(".verdict");
  out.verdict = v ? v.className : "";
  out.red = document.querySelectorAll(".finding.anomaly").length;
  var text = document.body.innerText, at = text.indexOf('{"');
  out.json = at < 0 ? "" : text.slice(Math.max(0, at - 60), at + 60);
  out.escape = text.indexOf("\\\\u20") >= 0;
  out.width = W;
  out.wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.width > W + 1) out.wide.push(el.tagName + "." + el.className + " " + Math.round(r.width));
  });
  out.scroll = document.documentElement.scrollWidth;
  // nothing wider than its card: a section scrolls sideways when its content is wider
  out.cards = [];
  document.querySelectorAll("section").forEach(function (sec) {
    if (sec.scrollWidth > sec.clientWidth + 1) out.cards.push(sec.id + " " + sec.scrollWidth + " > " + sec.clientWidth);
  });
  // a command cut off at the right (Reproduce) hides what it names: it wraps instead
  document.querySelectorAll("pre").forEach(function (pre) {
    if (pre.scrollWidth > pre.clientWidth + 1) out.cards.push("pre " + pre.textContent.slice(0, 60));
  });
  out.links = Array.prototype.map.call(document.querySelectorAll("a[href]"), function (a) {
    return a.getAttribute("href");
  });
  out.ids = Array.prototype.map.call(document.querySelectorAll("[id]"), function (x) { return x.id; });
  var pre = document.createElement("pre");
  pre.id = "page-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _probe(page: Path, tmp_path: Path, source: str | None = None) -> dict[str, Any]:
    """Lay out ``page`` (or ``source``, written next to it) in Chromium and measure it."""
    text = source if source is not None else page.read_text(encoding="utf-8")
    copy = page.with_name(".probe-" + page.name)
    copy.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = _run([f"--window-size={WIDTH},2000", "--dump-dom", copy.as_uri()], tmp_path / "profile")
    copy.unlink()
    m = re.search(r'<pre id="page-probe">(.*?)</pre>', res.stdout, re.S)
    assert m, f"the probe did not run: {res.stderr[-1500:]}"
    out: dict[str, Any] = json.loads(html.unescape(m.group(1)))
    return out


def _assert_readable(out: dict[str, Any]) -> None:
    assert out["json"] == "", f"raw JSON in the visible text: …{out['json']}…"
    assert out["escape"] is False, "a \\u escape in the visible text"
    assert out["wide"] == [], f"wider than the {out['width']} px viewport: {out['wide']}"
    assert out["scroll"] <= out["width"], "the page scrolls sideways"
    assert out["cards"] == [], f"wider than its card: {out['cards']}"


def _assert_file_links(out: dict[str, Any], page: Path) -> None:
    assert out["links"], "a page with no link at all: the probe read the wrong document"
    for href in out["links"]:
        if href.startswith("#"):
            assert href[1:] in out["ids"], f"{page.name}: no element #{href[1:]}"
            continue
        assert "://" not in href and not href.startswith("/"), f"{href}: not a relative link"
        target = page.parent / unquote(href.split("#")[0])
        assert target.exists(), f"{page.name}: {href} does not resolve ({target})"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return page_kinds.build_store(tmp_path_factory.mktemp("kinds") / "store")


@pytest.fixture(scope="module")
def store(pages: dict[str, Path]) -> Path:
    return pages["lab3-valid"].parents[2]


@pytest.mark.parametrize("kind", list(page_kinds.RUN_KINDS))
def test_run_page(kind: str, pages: dict[str, Path], tmp_path: Path) -> None:
    lab, verdict = page_kinds.RUN_KINDS[kind]
    page = pages[kind]
    assert json.loads((page.parent / "results.json").read_text())["verdict"] == verdict
    out = _probe(page, tmp_path)
    assert f"verdict {verdict}" in out["verdict"]
    if verdict == "valid":
        assert out["red"] == 0, "a red anomaly card under a green VALID"
    else:
        assert out["red"] >= 1, "an invalid run with no anomaly card"
    _assert_readable(out)
    _assert_file_links(out, page)
    # the workload's own section is there, as in the page the run wrote
    assert ("lab-report" if lab == "lab3" else "unsafe-lease") in out["ids"]


def test_class_report(tmp_path: Path) -> None:
    page = page_kinds.class_report(tmp_path / "grade")
    got = _probe(page, tmp_path)
    _assert_readable(got)
    _assert_file_links(got, page)
    text = page.read_text()
    assert "caught 1 of 1 controls" in text and "Flakiness is not measured" in text
    assert "--solution submissions/alice" in text and "/tmp/worker" not in text


@pytest.fixture()
def server(store: Path) -> Iterator[ReportServer]:
    srv = make_server(store, port=0, quiet=True, contributors_for=_report_contributors)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_serve_index(store: Path, server: ReportServer, tmp_path: Path) -> None:
    index = tmp_path / "index.html"
    out = _probe(index, tmp_path, source=index_page(store))
    _assert_readable(out)
    assert len(out["links"]) == 8  # four runs, each its page and its zip
    for href in out["links"]:
        with urllib.request.urlopen(urljoin(server.url, href), timeout=60) as r:
            assert r.status == 200, href
