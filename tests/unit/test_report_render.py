"""The report page of synthetic stored runs: verdict first, evidence, diagrams, timeline, plots."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chaos.report import NotARunDir, Section, SectionContributor, render
from chaos.report import plots as plots_mod
from chaos.report.loading import RunData
from chaos.workloads.lab1.report import UnsafeLeaseSection
from chaos.workloads.lab3.report import LabReportSection
from tests.fixtures import synthetic_runs as runs

# what chaos report passes for a run of each lab (the workloads' report_sections)
SECTIONS: dict[str, list[SectionContributor]] = {
    "lab1": [UnsafeLeaseSection()],
    "lab3": [LabReportSection()],
}


def _page(run_dir: Path, contributors: list[SectionContributor] | None = None) -> str:
    # as chaos report does: the sections of the workload the loaded run names
    out = render(run_dir, contributors if contributors is not None else _sections_of)
    assert out == run_dir.resolve() / "report.html"
    return out.read_text(encoding="utf-8")


def _sections_of(workload: str) -> list[SectionContributor]:
    return SECTIONS.get(workload, [])


def _timeline(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page, re.S)
    assert m, "timeline data missing"
    return json.loads(m.group(1))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(scope="module")
def invalid_lab3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The invalid lab3 run rendered once for the tests that only read its page and files (a
    render draws three matplotlib plots, about a second)."""
    run_dir = runs.invalid_lab3(tmp_path_factory.mktemp("store"))
    return run_dir, _page(run_dir)


def test_invalid_lab3_puts_the_verdict_and_its_sentence_first(
    invalid_lab3: tuple[Path, str],
) -> None:
    _, page = invalid_lab3
    verdict = page.index('id="verdict"')
    assert 'class="verdict invalid"' in page
    sentence = page.index("task t7: counter incremented twice — commit by n2 at 4.310 s")
    assert verdict < sentence < page.index('<section id="checkers">')
    assert "decided by double-apply, counter" in page


def test_invalid_lab3_draws_the_anomalys_sequence_diagram_with_the_pause_band(
    invalid_lab3: tuple[Path, str],
) -> None:
    run_dir, page = invalid_lab3
    m = re.search(r'<svg[^>]*class="seq" data-task="t7".*?</svg>', page, re.S)
    assert m, "no sequence diagram for t7"
    svg = m.group(0)
    for lane in ("client", "api@n1", "etcd", "relay@n1", "broker", "worker@n1", "worker@n2"):
        assert f">{lane}</text>" in svg
    assert "commit +5 counter=22" in svg
    assert "⚠ commit +5 counter=27 AGAIN" in svg
    assert "redeliver #2" in svg
    # The pause of worker@n2 is a band on worker@n2's lane, from its start to its heal.
    assert "pause worker@n2 (SIGSTOP) begins" in svg and "healed" in svg
    assert re.search(r'<rect x="\d+" y="[\d.]+" width="\d+" height="[\d.]+" fill="#f4a261"', svg)
    # Evidence that is a list of records reads as a table of them.
    assert '<th>commits</th><td><table class="grid nested">' in page
    # The diagram is also a file of its own, valid SVG.
    assert (run_dir / "plots" / "sequence-t7.svg").read_text().startswith("<svg")


def test_a_normal_task_is_drawn_for_comparison(invalid_lab3: tuple[Path, str]) -> None:
    _, page = invalid_lab3
    normal = page[page.index('<section id="normal">') :]
    m = re.search(r'class="seq" data-task="([^"]+)"', normal)
    assert m and m.group(1) not in ("t7",)
    assert "AGAIN" not in normal[: normal.index("</section>")]


def test_timeline_carries_every_client_op_and_the_fault_band(
    invalid_lab3: tuple[Path, str],
) -> None:
    run_dir, page = invalid_lab3
    assert '<canvas id="tl-canvas"' in page
    data = _timeline(page)
    history = [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()[1:]]
    invokes = [h for h in history if h["type"] == "invoke" and h["process"] != "nemesis"]
    assert sorted(data["i"]) == sorted(h["index"] for h in invokes)
    # Delta-encoded starts decode back to the invoke times (0.1 ms ticks).
    starts, acc = [], 0
    for d in data["s"]:
        acc += d
        starts.append(acc / data["unit"])
    by_index = dict(zip(data["i"], starts, strict=True))
    for h in invokes:
        assert by_index[h["index"]] == pytest.approx(h["time"], abs=1e-4)
    types = {data["i"][k]: data["types"][t] for k, t in enumerate(data["t"])}
    assert "info" in types.values() and "ok" in types.values()
    (band,) = data["bands"]
    assert band[2] == "pause" and band[6] == "f1"
    assert band[0] == round(4.316 * data["unit"]) and band[1] == round(9.504 * data["unit"])
    assert {"commit", "delivery", "ack"} <= set(data["kinds"])


def test_plots_are_written_as_png_and_svg_and_embedded(invalid_lab3: tuple[Path, str]) -> None:
    run_dir, page = invalid_lab3
    for name in ("latency-raw", "latency-quantiles", "throughput"):
        png = (run_dir / "plots" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert "<svg" in (run_dir / "plots" / f"{name}.svg").read_text()
        assert f'id="plot-{name}"><img alt=' in page
    assert page.count("data:image/png;base64,") == 3


def test_page_is_self_contained(invalid_lab3: tuple[Path, str]) -> None:
    _, page = invalid_lab3
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page)
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    assert not re.search(r"url\((https?:)?//", page)
    assert "default-src 'none'" in page


def test_valid_lab3_shows_lab_report_excerpt_and_reproduction(store: Path) -> None:
    page = _page(runs.valid_lab3(store))
    assert 'class="verdict valid"' in page and "all 3 checkers found the run valid" in page
    lab = page[page.index('<section id="lab-report">') :]
    lab = lab[: lab.index("</section>")]
    for s in ("relay-crash-before-publish", "publish-ack-lost", "consumer-ack-lost"):
        assert f"<td>{s}</td>" in lab
    for col in ("stream_count", "redelivery_count", "counter", "results", "verdict"):
        assert f"<th>{col}</th>" in lab
    excerpt = page[page.index('<section id="excerpt">') :]
    excerpt = excerpt[: excerpt.index("</section>")]
    # t3 is the task whose redelivery was recognised: its excerpt is the lab's chain.
    assert "task <b>t3</b>" in excerpt
    kinds = re.findall(r"<td>(publish|delivery|commit|suppressed|ack|crash)</td>", excerpt)
    assert (
        kinds.index("publish")
        < kinds.index("commit")
        < kinds.index("suppressed")
        < kinds.index("ack")
    )
    assert "num_delivered 2" in excerpt and "{&quot;" not in excerpt
    params = page[page.index('<section id="params">') :]
    assert "chaos run lab3 --solution reference --nemesis worker-exit-before-ack --seed 7" in params
    assert "etcd 3.5.1, nats-server 2.15.1, chaos 0.1.0" in params


@pytest.mark.usefixtures("no_plots")
def test_lab1_names_the_unsafe_lease_timeline(store: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(store))
    story = re.search(r'<ol class="story" id="unsafe-lease">(.*?)</ol>', page, re.S)
    assert story
    steps = re.findall(r"<li[^>]*>(.*?)</li>", story.group(1))
    assert len(steps) == 6
    assert steps[0].startswith("1.20 s — n1 acquired the lock with token 5")
    assert "the nemesis stopped n1 (pause)" in steps[1]
    assert "4.20 s — n1&#x27;s lease expired" in steps[2]
    assert "n2 acquired the lock with token 6" in steps[3] and "applied" in steps[3]
    assert "resumed" in steps[4]
    assert "APPLIED" in steps[5] and "applied twice" in steps[5]
    assert '<li class="story-bad">' in story.group(1)
    # the story sits right after the anomalies, before the generic sections that follow them
    assert page.index('<section id="anomalies">') < page.index('<section id="lease">')
    assert page.index('<section id="lease">') < page.index('<section id="timeline">')


@pytest.mark.usefixtures("no_plots")
def test_lab1_fenced_run_tells_the_stale_write_was_rejected(store: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(store, fenced=True))
    assert 'class="verdict valid"' in page
    story = page[page.index('id="unsafe-lease"') :]
    assert '<li class="story-ok">' in story and "was rejected as stale" in story


@pytest.mark.usefixtures("no_plots")
def test_without_contributors_the_page_is_generic(store: Path) -> None:
    page = _page(runs.lab1_unsafe_lease(store), [])
    assert 'id="unsafe-lease"' not in page and '<section id="lease">' not in page
    assert 'class="verdict invalid"' in page and '<section id="checkers">' in page
    assert "unsafe-lease" in page  # the checker's own result is still in the generic table
    page = _page(runs.valid_lab3(store), [])
    assert '<section id="lab-report">' not in page and '<section id="timeline">' in page


class _Broken:
    def expected_files(self) -> dict[str, str]:
        return {"extra.json": "no extra table"}

    def sections(self, run: RunData) -> list[Section]:
        raise RuntimeError(f"cannot tell {run.name}")


class _Told:
    def expected_files(self) -> dict[str, str]:
        return {}

    def sections(self, run: RunData) -> list[Section]:
        return [Section(id="told", title="Told", html="<p>told</p>", after="checkers")]


@pytest.mark.usefixtures("no_plots")
def test_a_contributor_that_raises_costs_only_its_own_sections(store: Path) -> None:
    page = _page(runs.invalid_lab3(store), [_Broken(), _Told()])
    assert "_Broken sections could not be drawn" in page and "cannot tell" in page
    assert "<code>extra.json</code> is missing — no extra table" in page
    assert page.index('<section id="checkers">') < page.index('<section id="told">')
    assert page.index('<section id="told">') < page.index('<section id="anomalies">')
    assert "task t7: counter incremented twice" in page


@pytest.mark.usefixtures("no_plots")
def test_truncated_run_renders_what_exists_and_says_what_is_missing(store: Path) -> None:
    page = _page(runs.truncated_run(store))
    assert "NOT CHECKED" in page and "results.json is missing" in page
    missing = page[page.index('id="missing"') :]
    missing = missing[: missing.index("</div>")]
    for name in ("events.jsonl", "final.json", "results.json", "lab-report.json"):
        assert f"<code>{name}</code> is missing" in missing
    assert "truncated last line" in page
    data = _timeline(page)
    assert len(data["i"]) == 2  # the op with no completion is kept, as info
    assert data["types"][data["t"][data["i"].index(2)]] == "info"
    assert data["bands"][0][5] == 1  # never healed
    assert "never healed" in page


def test_run_with_only_a_spec_renders(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(json.dumps({"lab": "lab3", "nemesis": ["pause", "kill"]}))
    page = _page(run_dir)
    assert "<code>history.jsonl</code> is missing" in page
    assert "chaos run lab3 --nemesis pause,kill" in page


def test_not_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotARunDir):
        render(tmp_path)


@pytest.mark.usefixtures("no_plots")
def test_odd_data_never_costs_the_page(store: Path) -> None:
    run_dir = runs.invalid_lab3(store)
    results = json.loads((run_dir / "results.json").read_text())
    results["results"][0]["anomalies"] += ["a bare string", {"task_id": "t-none"}, {"task": 7}]
    (run_dir / "results.json").write_text(json.dumps(results))
    (run_dir / "final.json").write_text("{not json")
    with open(run_dir / "events.jsonl", "a") as fh:
        fh.write(
            '{"time":5.5,"node":"n1","component":"relay","kind":"publish","task_id":"t7",'
            '"data":{"attempt":"x"}}\n["not an object"]\n'
        )
    page = _page(run_dir)
    assert "No events or ops name task t-none" in page
    assert "final.json: unreadable" in page
    assert "not a JSON object" in page


def test_a_failing_section_becomes_a_note(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object) -> str:
        raise RuntimeError("plot exploded")

    monkeypatch.setattr(plots_mod, "make_plots", boom)
    page = _page(runs.invalid_lab3(store))
    assert "section could not be drawn" in page and "plot exploded" in page
    assert "task t7: counter incremented twice" in page  # the rest is still there


def test_control_characters_from_the_code_under_test_are_shown_not_written() -> None:
    # a solution's exception text reached a checker summary with a terminal title sequence, a
    # bell and a screen clear; the page must not carry them (`cat report.html` would obey them)
    from chaos.report.html import e

    hostile = "refused \x1b]0;pwned\x07\x1b[2J<b>"
    out = e(hostile)
    assert out == "refused \\x1b]0;pwned\\x07\\x1b[2J&lt;b&gt;"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert e("two\nlines\tand a tab") == "two\nlines\tand a tab"
