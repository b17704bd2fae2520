"""Whole gradings on the in-memory lab3 and the fake backend: Dask's local cluster, real
``chaos run`` subprocesses, the ledger, resume, Ctrl-C. Seconds per run, no Docker."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

from chaos.grade import ledger, matrix
from chaos.grade.seeds import run_seed
from chaos.grade.session import GradeRequest, grade
from tests.fixtures.grade_class import CHAOS, REPO, make_class, processes_with
from tests.fixtures.grade_cli import MATRIX, GradedMemoryLab3


def _lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / ledger.LEDGER).read_text().splitlines() if x.strip()]


def test_a_class_graded_on_a_local_dask_cluster(tmp_path: Path) -> None:
    subs = make_class(tmp_path / "subs", "alice", "bob", "dave", missing="carol")
    req = GradeRequest(
        lab="memory-lab3",
        submissions=subs,
        matrix=matrix.load(MATRIX),
        repeats=1,
        seed=11,
        out=tmp_path / "out",
        chaos=CHAOS,
    )
    said: list[str] = []
    got = grade(req, controls=GradedMemoryLab3.grade_controls, parallel=2, progress=said.append)
    assert not got.interrupted and got.ran == 10 and got.skipped == 0

    rows = {r.name: r for r in got.table.rows}
    assert list(rows) == ["control:reference", "control:no-dedup", "alice", "bob", "carol", "dave"]

    def cell(name: str, config: str) -> tuple[int, int]:
        t = rows[name].cells[config].tally
        return t.passes, t.runs

    # the planted double apply is found under pause, never without a fault
    for good in ("control:reference", "alice"):
        assert cell(good, "pause") == (1, 1) and cell(good, "quiet") == (1, 1)
    for bad in ("control:no-dedup", "bob"):
        assert cell(bad, "pause") == (0, 1) and cell(bad, "quiet") == (1, 1)
    assert rows["bob"].cells["pause"].shown is not None
    # twice, or more often when a busy machine lets more than one redelivery through
    assert re.search(
        r"counter incremented (twice|three times|\d+ times)",
        rows["bob"].cells["pause"].shown.anomaly or "",
    )
    # malformed: a row with its reason, not a crash
    assert rows["carol"].reason == "no protocol.py" and cell("carol", "pause") == (0, 0)
    assert cell("dave", "pause") == (0, 1)
    assert rows["dave"].reason is not None and "did not start" in rows["dave"].reason
    power = {p.config: p for p in got.table.power}
    assert power["pause"].detections["control:no-dedup"].fails == 1
    assert power["quiet"].detections["control:no-dedup"].fails == 0

    out = req.out
    for name in ("report.html", "grades.csv", "grades.json", "grade.json"):
        assert (out / name).is_file(), name
    lines = _lines(out)
    assert len(lines) == 10
    for line in lines:
        assert line["seed"] == run_seed(11, str(line["student"]), str(line["config"]), 1)
        assert str(line["command"]).startswith("chaos run memory-lab3 ")
        assert f"--seed {line['seed']}" in str(line["command"])
    # every run's folder came back, rendered; without the live exchange and the mounts
    bob = out / ledger.run_folder("bob", "pause", 1)
    assert (bob / "report.html").is_file() and (bob / "history.jsonl").is_file()
    assert not (bob / "live").exists()
    # its page names the grade's folder of the run, not the worker's deleted store
    page = (bob / "report.html").read_text()
    assert f"chaos report {html.escape(shlex.quote(str(bob.absolute())))}</code>" in page
    assert "chaos-grade-" not in page
    assert 'href="runs/bob/pause/r1/report.html"' in (out / "report.html").read_text()

    # resumed: nothing finished is done again
    again = grade(req, controls=GradedMemoryLab3.grade_controls, parallel=2)
    assert again.ran == 0 and again.skipped == 10
    assert len(_lines(out)) == 10


def test_ctrl_c_stops_cleanly_and_resume_goes_on(tmp_path: Path) -> None:
    subs = make_class(tmp_path / "subs", "alice")
    out = tmp_path / "out"
    cmd = [*CHAOS, "grade"]
    common = ["--parallel", "1", "--chaos-command", " ".join(CHAOS)]
    # every process of this grade inherits the mark: its runs, forked or not, and the warm process
    mark = f"CHAOS_TEST_GRADE_MARK={out}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "CHAOS_TEST_GRADE_MARK": str(out)}
    proc = subprocess.Popen(
        [*cmd, str(subs), "--workload", "memory-lab3", "--repeats", "1", "--seed", "5", "--out", str(out), *common],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if (out / ledger.LEDGER).exists() and len(_lines(out)) >= 2:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("no two runs finished in 90 s")
        proc.send_signal(signal.SIGINT)
        said, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, said
    assert "interrupted" in said
    first = {(x["student"], x["config"]) for x in _lines(out)}
    assert 2 <= len(first) < 6
    assert (out / "report.html").is_file()  # the partial report

    # no run of the grade was left running, nor the warm process the runs were forked from
    assert not _processes_naming("tests.fixtures.grade_cli\0run\0memory-lab3")
    # (the warm process exits when it sees the grader gone: a moment under load)
    deadline = time.monotonic() + 15
    while processes_with(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_with(mark)

    done = subprocess.run(
        [*cmd, "--resume", str(out), *common], cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = _lines(out)
    keys = [(x["student"], x["config"]) for x in lines]
    assert len(keys) == len(set(keys)) == 6, keys  # 3 rows x 2 configs, none run twice
    assert f"{6 - len(first)} run(s) to do, {len(first)} already done" in done.stderr
    doc = json.loads((out / "grades.json").read_text())
    assert doc["grade"]["seed"] == 5
    assert all(c["runs"] == 1 for r in doc["rows"] for c in r["cells"].values())


def _processes_naming(text: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if text in p.joinpath("cmdline").read_text(errors="replace"):
                    found.append(int(p.name))
            except OSError:
                continue
    return found


def test_environment_failures_are_retried_and_never_graded(tmp_path: Path) -> None:
    subs = make_class(tmp_path / "subs", "envy")
    (subs / "flo").mkdir()
    (subs / "flo" / "protocol.py").write_text(f'ENV_BROKEN_ONCE = "{tmp_path / "flo-failed"}"\n')
    one = matrix.parse(
        "defaults: {backend: fake, option: {ack_wait: 0.7}, time-limit: 2}\nconfigs:\n  - name: quiet\n",
        tmp_path / "g.yaml",
    )
    req = GradeRequest(
        lab="memory-lab3", submissions=subs, matrix=one, repeats=1, seed=1,
        out=tmp_path / "out", chaos=CHAOS, retries=2,
    )  # fmt: skip
    got = grade(req, controls={}, parallel=2)
    rows = {r.name: r for r in got.table.rows}
    envy = rows["envy"].cells["quiet"]
    # never graded as the student's failure: no run counted, shown as an environment error
    assert envy.env_only and envy.tally.runs == 0 and envy.tally.env_errors == 1
    assert rows["envy"].score is None
    line = next(x for x in _lines(req.out) if x["student"] == "envy")
    assert line["status"] == "env-error" and line["attempts"] == 3
    assert "no Docker engine answers" in str(line["message"])
    assert "environment error" in (req.out / "report.html").read_text()
    # failed once, retried, then graded as usual
    flo = rows["flo"].cells["quiet"]
    assert (flo.tally.passes, flo.tally.runs, flo.tally.env_errors) == (1, 1, 0)
    assert (tmp_path / "flo-failed").exists()  # it did fail once

    # a resume tries the environment failure again (it is not a result), and nothing else
    (subs / "envy" / "protocol.py").write_text("DEDUP = True\n")
    again = grade(req, controls={}, parallel=2)
    assert again.ran == 1 and again.skipped == 1
    rows = {r.name: r for r in again.table.rows}
    assert rows["envy"].cells["quiet"].tally.runs == 1


def test_a_hanging_run_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    from chaos.grade.task import RunJob, run_one

    subs = make_class(tmp_path / "subs", "hank")
    job = RunJob(
        student="hank", config="quiet", repeat=1, seed=1, lab="memory-lab3",
        solution=str(subs / "hank"), options=("--backend", "fake"), timeout=4.0, chaos=CHAOS,
    )  # fmt: skip
    t0 = time.monotonic()
    got = run_one(job)
    assert got.result.status == "timeout" and "no verdict after 4 s" in (got.result.message or "")
    assert time.monotonic() - t0 < 30  # SIGTERM was enough: the run stopped itself
    assert not _processes_naming(str(subs))


def test_a_submission_travels_with_its_job(tmp_path: Path) -> None:
    """Workers need not see the grader's disk: the job carries the student's folder."""
    from chaos.grade.task import RunJob, pack_submission, run_one

    subs = make_class(tmp_path / "subs", "bob")
    (subs / "bob" / "__pycache__").mkdir()
    (subs / "bob" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    job = RunJob(
        student="bob", config="pause", repeat=1, seed=3, lab="memory-lab3",
        solution="/nowhere/on/this/worker/bob", submission=pack_submission(subs / "bob"),
        options=tuple(matrix.load(MATRIX).get("pause").argv()), timeout=120, chaos=CHAOS,
        kept_at=str(tmp_path / "run"),
    )  # fmt: skip
    finished = run_one(job)
    got = finished.result
    # bob's DEDUP = False reached the run: the planted double apply was found
    assert got.status == "invalid" and "double-apply" in got.checkers, got
    assert got.command.endswith("--solution /nowhere/on/this/worker/bob")

    # the run folder names the submission, not the worker's deleted copy of it: its stored
    # command and its page's Reproduce are the cell's own command (options, seed, solution)
    from chaos.grade.task import unpack

    unpack(finished.archive, tmp_path / "run")
    spec = json.loads((tmp_path / "run" / "spec.json").read_text())
    stored = spec["command"]
    assert stored == got.command == job.command()
    assert stored == (
        "chaos run memory-lab3 " + " ".join(job.options) + " --seed 3 "
        "--solution /nowhere/on/this/worker/bob"
    )
    assert spec["solution"] == "/nowhere/on/this/worker/bob"  # the page's header and table
    page = (tmp_path / "run" / "report.html").read_text()
    assert f"<h3>Reproduce</h3><pre><code>{html.escape(stored)}</code></pre>" in page
    # nothing on the page names the worker's deleted folder: "Re-render this page" and the
    # footer name the folder the grade keeps the run in
    assert "chaos-grade-" not in page
    kept = html.escape(shlex.quote(str(tmp_path / "run")))
    assert f"<h3>Re-render this page</h3><pre><code>chaos report {kept}</code></pre>" in page
    assert f"from <code>{html.escape(str(tmp_path / 'run'))}</code>." in page
