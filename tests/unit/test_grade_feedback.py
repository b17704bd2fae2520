"""Feedback packs (``chaos feedback``) of a real grade of the in-memory lab3: real ``chaos run``
subprocesses on the fake backend, seconds, no Docker (the Docker one:
tests/integration/test_grade_feedback.py)."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.exits import Exit
from chaos.grade import ledger, matrix
from chaos.grade.feedback import GRADEBOOK, PackLeak, write_feedback
from chaos.grade.scrub import SOLUTION, Scrub
from chaos.grade.session import GradeRequest, grade
from chaos.grade.story import lead_of, student_command
from tests.fixtures.grade_class import CHAOS, REPO, SOURCES
from tests.fixtures.grade_cli import MATRIX, GradedMemoryLab3

# names that occur in no run's own data by chance (a PNG could hold "bob")
GOOD, BAD, BROKEN = "ada_lovelace_x", "brian_kernighan_y", "cy_crashes_on_import_z"
CLASS = (GOOD, BAD, BROKEN)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fb")
    for name, src in ((GOOD, SOURCES["alice"]), (BAD, SOURCES["bob"]), (BROKEN, SOURCES["dave"])):
        (root / "subs" / name).mkdir(parents=True)
        (root / "subs" / name / "protocol.py").write_text(src)
    req = GradeRequest(
        lab="memory-lab3",
        submissions=root / "subs",
        matrix=matrix.load(MATRIX),
        repeats=1,
        seed=11,
        out=root / "grade",
        chaos=CHAOS,
        controls=(),
    )
    got = grade(req, controls=GradedMemoryLab3.grade_controls, parallel=2)
    assert got.ran == 6
    return req.out


@pytest.fixture(scope="module")
def packs(graded: Path) -> Path:
    out = graded.parent / "packs"
    done = write_feedback(graded, out)
    assert set(done.zips) == set(CLASS)
    return out


def _members(z: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(z) as f:
        return {n: f.read(n) for n in f.namelist()}


def test_each_pack_holds_its_student_only(graded: Path, packs: Path) -> None:
    subs = graded.parent / "subs"
    for me in CLASS:
        files = _members(packs / f"{me}.zip")
        assert f"{me}/index.html" in files and f"{me}/results.json" in files
        # the run pages were copied beside the page, every one of the student's runs
        assert {f"{me}/runs/{c}/r1/report.html" for c in ("pause", "quiet")} <= set(files)
        others = [o for o in CLASS if o != me]
        for name, data in files.items():
            for never in (*others, str(subs), str(graded.resolve()), "chaos-grade-"):
                assert never not in name and never.encode() not in data, (me, name, never)


def test_the_page_tells_what_failed_and_the_command_reproduces_it(
    graded: Path, packs: Path
) -> None:
    page = (packs / BAD / "index.html").read_text()
    assert 'id="config-pause"' in page and "failed 1 of 1 run(s)" in page
    assert "double-apply" in page and "counter incremented" in page
    assert 'href="runs/pause/r1/report.html"' in page
    good = (packs / GOOD / "index.html").read_text()
    assert "Nothing failed." in good and "--solution" not in good
    commands = re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S)
    assert len(commands) == 1
    argv = shlex.split(html.unescape(commands[0]))
    assert argv[:3] == ["chaos", "run", "memory-lab3"] and SOLUTION in argv
    # the student's own folder in place of the placeholder, this checkout's chaos for `chaos`
    argv[argv.index(SOLUTION)] = str(graded.parent / "subs" / BAD)
    store = graded.parent / "repro-store"
    proc = subprocess.run(
        [*CHAOS, *argv[1:], "--store", str(store), "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    graded_status = ledger.Ledger(graded).finished()[f"{BAD}/pause/1"].status
    assert graded_status == "invalid"
    assert proc.returncode == Exit.INVALID, proc.stdout + proc.stderr


def test_a_submission_that_does_not_start_is_told_why(packs: Path) -> None:
    page = (packs / BROKEN / "index.html").read_text()
    assert "failed 1 of 1 run(s)" in page and "did not start" in page
    assert page.count(f"--solution {SOLUTION}") == 2  # each configuration's command
    assert "Nothing failed." not in page


def test_gradescope_results_and_the_gradebook(packs: Path) -> None:
    bad = json.loads((packs / BAD / "results.json").read_text())
    tests = {t["name"]: t for t in bad["tests"]}
    # the memory matrix weighs pause 2, quiet 1
    assert (tests["pause"]["score"], tests["pause"]["max_score"]) == (0.0, 2.0)
    assert (tests["quiet"]["score"], tests["quiet"]["max_score"]) == (1.0, 1.0)
    assert tests["pause"]["status"] == "failed" and tests["pause"]["visibility"] == "visible"
    assert f"--solution {SOLUTION}" in tests["pause"]["output"]
    assert bad["score"] == 1.0
    rows = list(csv.DictReader(io.StringIO((packs / GRADEBOOK).read_text())))
    by = {r["student"]: r for r in rows}
    assert set(by) == set(CLASS)
    assert (by[BROKEN]["points"], by[BROKEN]["failed"]) == ("0", "pause quiet")
    assert (by[GOOD]["points"], by[GOOD]["max_points"], by[GOOD]["percent"]) == ("3", "3", "100.0")
    assert (by[BAD]["points"], by[BAD]["percent"], by[BAD]["failed"]) == ("1", "33.3", "pause")
    # the gradebook is the instructor's: in no pack
    assert not any(n.endswith(GRADEBOOK) for n in _members(packs / f"{BAD}.zip"))


def test_a_pack_that_would_name_another_student_is_refused(graded: Path, tmp_path: Path) -> None:
    """The attack: another student's folder written into a run's file (a planted line, a log)
    must stop the pack, not ship it."""
    copy = tmp_path / "grade"
    shutil.copytree(graded, copy)
    events = copy / ledger.run_folder(BAD, "quiet", 1) / "events.jsonl"
    planted = str(graded.parent / "subs" / GOOD)
    with open(events, "a") as fh:
        fh.write(json.dumps({"time": 1.0, "kind": "note", "path": planted}) + "\n")
    with pytest.raises(PackLeak, match=GOOD):
        write_feedback(copy, tmp_path / "out")
    assert not (tmp_path / "out" / f"{BAD}.zip").exists()
    assert not (tmp_path / "out" / BAD).exists()


def test_a_link_or_a_fifo_in_a_run_folder_is_not_followed(graded: Path, tmp_path: Path) -> None:
    copy = tmp_path / "grade"
    shutil.copytree(graded, copy)
    secret = tmp_path / "secret.txt"
    secret.write_text("the instructor's answer key\n")
    (copy / ledger.run_folder(GOOD, "quiet", 1) / "notes.txt").symlink_to(secret)
    # a FIFO would block a reader that opened it for reading
    os.mkfifo(copy / ledger.run_folder(GOOD, "quiet", 1) / "pipe.log")
    done = write_feedback(copy, tmp_path / "out")
    files = _members(done.zips[GOOD])
    assert not any(n.endswith(("notes.txt", "pipe.log")) for n in files)
    assert not any(b"answer key" in d for d in files.values())


def test_the_command_refuses_a_folder_that_is_not_a_grade(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["feedback", str(tmp_path)])
    assert r.exit_code == Exit.USAGE and "not a grade" in r.output


def test_paths_of_the_grading_machine_are_replaced() -> None:
    s = Scrub(solution="/srv/subs/ada", grade_dir="/srv/out", submissions="/srv/subs")
    said = s.text(
        "chaos run lab3 --solution /srv/subs/ada; chaos report /srv/out/runs/ada/p/r1; "
        "copy at /tmp/chaos-grade-k3x_9/submission/ada"
    )
    assert "/srv" not in said and "chaos-grade-" not in said
    assert f"--solution {SOLUTION};" in said and "grade/runs/ada/p/r1" in said


def test_the_command_names_the_students_folder_and_the_packs_schedule() -> None:
    cmd = "chaos run lab3 --schedule /srv/m/plans/p.yaml --seed 5 --solution /srv/subs/ada"
    got = shlex.split(student_command(cmd, "schedules/p.yaml") or "")
    assert got[got.index("--schedule") + 1] == "schedules/p.yaml"
    assert got[got.index("--solution") + 1] == SOLUTION and got[got.index("--seed") + 1] == "5"


def test_the_lead_is_the_most_explanatory_anomaly_and_never_an_observation() -> None:
    results = {
        "results": [
            {"checker": "scenario-fired", "verdict": "unknown", "summary": "did not fire",
             "anomalies": [{"message": "the scenario never fired"}]},
            {"checker": "counter", "verdict": "invalid", "summary": "counter off by 2",
             "anomalies": [{"counter": 12}]},
            {"checker": "double-apply", "verdict": "invalid", "summary": "t1 applied twice",
             "anomalies": [{"task_id": "t1", "chain": [
                 {"time": 0.5, "node": "n1", "component": "worker", "step": "commit"}]}]},
        ]
    }  # fmt: skip
    lead = lead_of(results)
    assert lead is not None and lead.checker == "double-apply"
    assert lead.steps == ("0.500 s n1 worker commit",)
    # a run unknown for its setup alone still says why, in its checker's own sentence
    only = lead_of({"results": [results["results"][0]]})
    assert only is not None and (only.checker, only.sentence) == ("scenario-fired", "did not fire")


def test_grade_writes_the_packs_with_feedback(tmp_path: Path) -> None:
    (tmp_path / "subs" / BAD).mkdir(parents=True)
    (tmp_path / "subs" / BAD / "protocol.py").write_text(SOURCES["bob"])
    proc = subprocess.run(
        [*CHAOS, "grade", str(tmp_path / "subs"), "--workload", "memory-lab3", "--repeats", "1",
         "--seed", "11", "--controls", "none", "--out", str(tmp_path / "grade"),
         "--feedback", str(tmp_path / "packs"), "--parallel", "2",
         "--chaos-command", shlex.join(CHAOS)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"feedback: {tmp_path / 'packs'}" in proc.stdout
    assert (tmp_path / "packs" / f"{BAD}.zip").is_file()
    assert (tmp_path / "packs" / GRADEBOOK).is_file()


def test_grade_refuses_a_feedback_folder_that_holds_other_files_before_any_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    (tmp_path / "subs" / "ada" / "protocol.py").write_text("x = 1\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("%\n")
    r = CliRunner().invoke(
        main,
        ["grade", str(tmp_path / "subs"), "--workload", "lab3", "--out", str(tmp_path / "o"),
         "--feedback", str(tmp_path / "mine")],
    )  # fmt: skip
    assert r.exit_code == Exit.USAGE and "not a feedback folder" in r.output
    assert not (tmp_path / "o").exists()
