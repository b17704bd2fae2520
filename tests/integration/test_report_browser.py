"""The report in a real browser: Debian's headless Chromium opens the page of an invalid lab3 run
from a file:// URL, with no network, and must find the verdict sentence, the anomaly's sequence
diagram and a working timeline. A screenshot is kept in test-artifacts/ for a human to look at.

Needs only the ``chromium`` package (scripts/apt-packages.txt); not an integration-marked test, so
it runs in every CI job.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from chaos.report import render
from tests.fixtures import synthetic_runs as runs

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

# Everything that could make Chromium reach the network is off; the page only loads file://.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
]

# Appended to a copy of the page: real mouse and wheel events on the canvas, then the tooltip
# text and the timeline's state written into the DOM, which --dump-dom hands back.
PROBE = """
<script>
(function () {
  var out = {};
  try {
    var tl = window.chaosTimeline, c = document.getElementById("tl-canvas");
    var r = c.getBoundingClientRect(), idx = TARGET_INDEX;
    var k = Array.prototype.indexOf.call(tl.index, idx);
    var lane = 0;
    while (tl.laneStart[lane + 1] <= k) lane++;
    var x = (tl.xOf(tl.start[k]) + tl.xOf(tl.end[k])) / 2, y = tl.laneY(lane) + tl.laneHeight / 2;
    c.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + x, clientY: r.top + y, bubbles: true}));
    var tip = document.getElementById("tl-tip");
    out.tip = tip.hidden ? "" : tip.textContent;
    var before = tl.xOf(tl.start[k]);
    c.dispatchEvent(new WheelEvent("wheel", {clientX: r.left + x, clientY: r.top + y, deltaY: -500, bubbles: true, cancelable: true}));
    out.zoomed = Math.abs(tl.xOf(tl.start[k]) - before) > 1 || Math.abs(x - tl.xOf(tl.start[k])) > 0;
    var x2 = (tl.xOf(tl.start[k]) + tl.xOf(tl.end[k])) / 2;
    c.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + x2, clientY: r.top + y, bubbles: true}));
    out.tipAfterZoom = tip.hidden ? "" : tip.textContent;
    out.drawn = c.getAttribute("data-drawn");
    out.drawMs = c.getAttribute("data-draw-ms");
  } catch (e) { out.error = String(e); }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail(
            "chromium is not installed: run scripts/bootstrap (as root), which installs the "
            "Debian packages listed in scripts/apt-packages.txt"
        )
    return exe


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = runs.invalid_lab3(tmp_path_factory.mktemp("browser") / "store")
    return render(run_dir)


def test_chromium_finds_verdict_diagram_and_a_live_timeline(report: Path, tmp_path: Path) -> None:
    page = report.read_text(encoding="utf-8")
    history = (report.parent / "history.jsonl").read_text()
    t7 = re.search(
        r'"index":(\d+),[^\n]*"type":"invoke","f":"create","value":\{"task_id":"t7"', history
    )
    assert t7, "fixture has no create of t7"
    probe = report.with_name("probe.html")
    probe.write_text(
        page.replace("</body>", PROBE.replace("TARGET_INDEX", t7.group(1)) + "</body>")
    )
    res = _run(["--dump-dom", probe.as_uri()], tmp_path / "profile")
    dom = res.stdout
    assert res.returncode == 0 and "<html" in dom, res.stderr[-2000:]

    verdict = re.search(r'<div class="verdict invalid" id="verdict">(.*?)<nav>', dom, re.S)
    assert verdict, "no invalid verdict block in the rendered DOM"
    assert runs.INVALID_SENTENCE in html.unescape(verdict.group(1))

    svg = re.search(r'<svg[^>]*class="seq"[^>]*data-task="t7".*?</svg>', dom, re.S)
    assert svg, "the anomaly's sequence diagram is missing"
    assert "AGAIN" in svg.group(0) and "worker@n2" in svg.group(0)

    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert m, "the probe script did not run"
    out = json.loads(html.unescape(m.group(1)))
    assert "error" not in out, out
    assert int(out["drawn"]) > 0 and float(out["drawMs"]) >= 0
    assert "create ok" in out["tip"] and "task_id=t7" in out["tip"], out
    assert out["zoomed"] is True
    assert "task_id=t7" in out["tipAfterZoom"], out


def test_screenshot_is_kept_as_an_artifact(report: Path, tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-invalid-lab3.png"
    shot.unlink(missing_ok=True)
    res = _run(["--window-size=1300,2600", f"--screenshot={shot}", report.as_uri()], tmp_path / "p")
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    from matplotlib import image

    pixels = image.imread(str(shot))
    assert pixels.shape[:2] == (2600, 1300)
    # The verdict banner (#c62828) is painted near the top: the page really rendered.
    top = (pixels[:300, :, :3] * 255).round()
    red = (
        (abs(top[..., 0] - 0xC6) < 8)
        & (abs(top[..., 1] - 0x28) < 8)
        & (abs(top[..., 2] - 0x28) < 8)
    )
    assert red.sum() > 50_000
