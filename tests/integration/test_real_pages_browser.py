"""Pages of real runs in headless Chromium, read as an instructor reads them (issue 32).

The synthetic pages of test_page_kinds_browser.py have no etcd-proxy journal, no etcd record and
small seeds; a real run has all three, and it is on real runs that the page printed raw JSON,
wider than the window, and a seed as a date. A real lab3 run with a trigger and a real lab1 run
with a pause, each with a seed between 1e9 and 4e9, must pass the same probes: no red card under
VALID, no ``{"`` in the visible text, nothing wider than the viewport, every link resolving; the
fault named in the header, Parameters, the serve index and ``chaos ls``; the seed a number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chaos.cli.report import report_contributors as _report_contributors
from chaos.report import render
from chaos.report.serve import index_page
from tests.integration.conftest import chaos, run_dir_from
from tests.integration.test_page_kinds_browser import _assert_file_links, _assert_readable, _probe

pytestmark = pytest.mark.integration

SEED = 1783085369  # seconds since 1970 in 2026: a number a date guess would turn into one
RUNS = {
    "lab3": ("--trigger", "kill relay before publish", "--tasks", "20"),
    "lab1": ("--nemesis", "pause"),
}
OPEN_ALL = '<script>document.querySelectorAll("details").forEach(d => { d.open = true; });</script>'
FAULT = {"lab3": "trigger 'kill relay before publish'", "lab1": "pause"}


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    store = tmp_path_factory.mktemp("real") / "store"
    out = {}
    for lab, args in RUNS.items():
        p = chaos("run", lab, *args, "--seed", str(SEED), store=store, timeout=600, page=True)
        assert p.returncode in (0, 1, 2), p.stdout + p.stderr
        out[lab] = run_dir_from(p)
    return out


def _visible(page: str) -> str:
    return re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", page, flags=re.S)


@pytest.mark.parametrize("lab", list(RUNS))
def test_a_real_run_page_reads_as_words(lab: str, real: dict[str, Path], tmp_path: Path) -> None:
    run_dir = real[lab]
    page = render(run_dir, _report_contributors)
    assert (run_dir / "final.json").read_text().count('"journal"') == 1, "no journal to render"
    source = page.read_text(encoding="utf-8")
    # as it opens, and with every fold opened: what is folded must read as well
    for html in (source, source.replace("</body>", OPEN_ALL + "</body>")):
        out = _probe(page, tmp_path, source=html)
        if "verdict valid" in out["verdict"]:
            assert out["red"] == 0, "a red anomaly card under a green VALID"
        _assert_readable(out)
        _assert_file_links(out, page)
    text = _visible(page.read_text(encoding="utf-8"))
    # the seed is a number everywhere (header, Parameters, Reproduce), never a date
    assert f"seed {SEED}" in text and f"--seed {SEED}" in text
    assert "2026-07-03" not in text, "the seed was printed as a date"
    # the fault is named in the header and in Parameters
    header = text[: text.index("Checkers")]
    assert FAULT[lab] in header.replace("&#x27;", "'"), header[:400]
    assert text.count(FAULT[lab].replace("'", "&#x27;")) >= 2
    # the journal is a folded table of operations, its times seconds into the run
    assert "operation(s) the services sent to etcd" in text
    assert "Times are seconds into the run" in text


def test_the_real_index_reads_right_in_chromium(real: dict[str, Path], tmp_path: Path) -> None:
    """`chaos serve`'s index of a store of real runs passes the page probes (issue 32)."""
    store = real["lab3"].parents[1]
    out = _probe(tmp_path / "index.html", tmp_path, source=index_page(store))
    _assert_readable(out)
    assert out["links"], "no run linked"


def test_the_index_and_ls_name_the_fault_and_the_seed(real: dict[str, Path]) -> None:
    store = real["lab3"].parents[1]
    index = _visible(index_page(store)).replace("&#x27;", "'")
    listed = chaos("ls", store=store, timeout=60).stdout
    for lab in RUNS:
        assert FAULT[lab] in index and FAULT[lab] in listed, (index, listed)
    assert index.count(str(SEED)) == 2 and listed.count(f"seed={SEED}") == 2


def test_a_long_reproduce_command_wraps(real: dict[str, Path], tmp_path: Path) -> None:
    """A grade's run names the submission's path in its command: cut off at the right, the
    page hid it (issue 32). The probe lists a ``<pre>`` wider than its box."""
    run_dir = real["lab1"]
    spec_file = run_dir / "spec.json"
    kept = spec_file.read_text()
    spec = json.loads(kept)
    long = "/home/instructor/course/2026/submissions/a-student-with-a-long-name/lab1/solution"
    spec["command"] = f"chaos run lab1 --seed {SEED} --nemesis pause --solution {long}"
    spec_file.write_text(json.dumps(spec))
    try:
        page = render(run_dir, _report_contributors)
        out = _probe(page, tmp_path)
    finally:
        spec_file.write_text(kept)
    assert long in page.read_text(encoding="utf-8")
    _assert_readable(out)
