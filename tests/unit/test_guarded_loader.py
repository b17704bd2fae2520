"""The one guarded loader, and the caps around what chaos reads, copies and holds.

Every file chaos is asked to read (a grade matrix, a nodes file, a schedule, a history, a run's
artefacts) is a regular file of a bounded size, refused at once otherwise — a FIFO once hung
``chaos grade --matrix``, ``/dev/zero`` grew it to 2.7 GB, 5,000 nested ``[`` ended in
RecursionError. Submissions are never followed through links, and their size is known before
anything is read or copied. Each case here is an attack and the answer it must get.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from chaos.checkers.completeness import completeness
from chaos.checkers.verdict import Verdict
from chaos.cluster.ssh.nodes import NodesFileError
from chaos.cluster.ssh.nodes import load as load_nodes
from chaos.core.live import EventTail
from chaos.core.quota import QuotaWatch
from chaos.grade import submissions, task
from chaos.grade.matrix import MatrixError
from chaos.grade.matrix import load as load_matrix
from chaos.histories.files import read_input
from chaos.histories.limits import InputError
from chaos.histories.store import StoredRun
from chaos.nemesis.schedule import ScheduleError, load_schedule
from chaos.orchestrator.run import MOUNT_CAP, check_mounts, copy_mounts

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "fifo.yaml"
    os.mkfifo(p)
    return p


def _deep(tmp_path: Path, n: int = 5000) -> Path:
    p = tmp_path / "deep.yaml"
    p.write_text("[" * n + "]" * n + "\n")
    return p


def test_the_loader_takes_regular_files_only_and_never_blocks(tmp_path: Path, fifo: Path) -> None:
    ok = tmp_path / "ok.txt"
    ok.write_bytes(b"hello\n")
    assert read_input(ok, 100) == b"hello\n"
    link = tmp_path / "link.txt"
    link.symlink_to(ok)
    assert read_input(link, 100) == b"hello\n"  # a path the user named may be a link
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    for bad, why in [
        (fifo, "a FIFO, not a regular file"),
        (Path("/dev/zero"), "a device, not a regular file"),
        (zero, "a device, not a regular file"),
        (tmp_path, "a folder"),
        (tmp_path / "missing", "no such file"),
    ]:
        t0 = time.monotonic()
        with pytest.raises(InputError, match=why) as e:
            read_input(bad, 100)
        assert time.monotonic() - t0 < 5
        assert str(bad) in str(e.value)


def test_a_file_over_the_cap_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as fh:
        fh.truncate(300 << 20)  # 300 MB that take no block: reading them would
    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"314572800 bytes, more than the 1048576"):
        read_input(sparse, 1 << 20)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep"])
def test_grade_matrix_nodes_file_and_schedule_refuse_each_hostile_file(
    tmp_path: Path, fifo: Path, kind: str
) -> None:
    path = {"fifo": fifo, "zero": Path("/dev/zero"), "deep": _deep(tmp_path)}[kind]
    want = {"fifo": "a FIFO", "zero": "a device", "deep": "nested deeper than 20 levels"}[kind]
    for load, error in [
        (load_matrix, MatrixError),
        (load_nodes, NodesFileError),
        (load_schedule, ScheduleError),
    ]:
        t0 = time.monotonic()
        with pytest.raises(error, match=want) as e:
            load(path)  # type: ignore[operator]
        assert str(path) in str(e.value) and time.monotonic() - t0 < 10  # a loaded machine


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep"])
def test_chaos_grade_matrix_exits_3_at_once(tmp_path: Path, fifo: Path, kind: str) -> None:
    path = {"fifo": fifo, "zero": Path("/dev/zero"), "deep": _deep(tmp_path)}[kind]
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "protocol.py").write_text("def create(): pass\ndef complete(): pass\n")
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "grade", str(subs), "--workload", "lab3",
         "--matrix", str(path), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=30, cwd=REPO,
    )  # fmt: skip
    assert p.returncode == 3, p.stdout + p.stderr
    assert str(path) in p.stderr and "Traceback" not in p.stderr


def test_chaos_check_of_a_fifo_exits_3(fifo: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "check", str(fifo), "--model", "register"],
        capture_output=True, text=True, timeout=30, cwd=REPO,
    )  # fmt: skip
    assert p.returncode == 3 and "not a regular file" in p.stderr, p.stderr


def test_an_empty_history_is_unknown_from_the_command_line_as_from_the_api(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "h.jsonl"
    empty.write_bytes(b"")
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "check", str(empty), "--model", "register"],
        capture_output=True, text=True, timeout=30, cwd=REPO,
    )  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    assert "the history decides nothing" in p.stdout + p.stderr


# ------------------------------------------------------------------ submissions


def test_a_student_folder_that_is_a_link_is_a_row_never_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "protocol.py").write_text("x = 1\n")
    root = tmp_path / "subs"
    root.mkdir()
    (root / "mallory").symlink_to(elsewhere)
    (root / "bob").mkdir()
    (root / "bob" / "protocol.py").symlink_to(elsewhere / "protocol.py")
    rows = {s.name: s for s in submissions.discover(root)}
    assert rows["mallory"].problem == submissions.LINKED
    assert rows["mallory"].solution == str(root / "mallory")  # not resolved to where it leads
    assert rows["bob"].problem is not None and "symbolic link" in rows["bob"].problem


def test_an_oversized_submission_is_a_row_read_by_nothing(tmp_path: Path) -> None:
    root = tmp_path / "subs"
    (root / "eve").mkdir(parents=True)
    (root / "eve" / "protocol.py").write_text("x = 1\n")
    with (root / "eve" / "blob.bin").open("wb") as fh:
        fh.truncate(300 << 20)  # sparse: its apparent size counts
    (row,) = submissions.discover(root)
    assert row.problem is not None and "more than a submission may" in row.problem


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(3):
            z.writestr(f"f{i}", b"\0" * (1 << 20))
    bomb = buf.getvalue()
    real = task.MAX_ARCHIVE_BYTES
    try:
        task.MAX_ARCHIVE_BYTES = 2 << 20  # a 3 MiB archive is a bomb at a 2 MiB cap
        with pytest.raises(task.ArchiveTooLarge, match="3 entries and 3145728 bytes"):
            task.unpack(bomb, tmp_path / "out")
    finally:
        task.MAX_ARCHIVE_BYTES = real
    assert not list((tmp_path / "out").rglob("f*"))
    task.unpack(bomb, tmp_path / "ok")
    assert (tmp_path / "ok" / "f2").stat().st_size == 1 << 20


def test_a_solution_is_measured_before_it_is_copied(tmp_path: Path) -> None:
    sol = tmp_path / "sol"
    sol.mkdir()
    (sol / "protocol.py").write_text("x = 1\n")
    with (sol / "sparse.bin").open("wb") as fh:
        fh.truncate(300 << 20)
    os.mkfifo(sol / "fifo")  # counted, never opened
    dest = tmp_path / "run" / "mounts"
    with pytest.raises(ValueError, match="refused before anything was copied"):
        copy_mounts({str(sol): "/opt/solution"}, dest)
    assert not dest.exists()  # nothing landed
    (sol / "sparse.bin").unlink()
    for i in range(2100):
        (sol / f"m{i}.py").write_text("")
    with pytest.raises(ValueError, match="2000 entries"):
        check_mounts({str(sol): "/opt/solution"})
    assert MOUNT_CAP == 64 << 20


# ------------------------------------------------------------------ events and quotas


def _events(live: Path, name: str, n: int, pad: int = 0) -> None:
    (live / "events").mkdir(parents=True, exist_ok=True)
    line = {"mono": 1.0, "node": "n1", "component": "x", "kind": "noise", "pid": 1}
    if pad:
        line["data"] = {"pad": "y" * pad}
    with (live / "events" / name).open("a") as fh:
        fh.write((json.dumps(line) + "\n") * n)


def test_the_tail_stops_at_its_event_cap_and_says_so(tmp_path: Path) -> None:
    _events(tmp_path, "a.jsonl", 300)
    tail = EventTail(tmp_path, 0.0, max_events=100)
    tail.poll()
    tail.poll()
    assert len(tail.events) == 100
    assert tail.over_quota is not None and "more than 100 events" in tail.over_quota
    assert any("more than 100 events" in p for p in tail.problems)
    assert tail.merge_to(tmp_path / "events.jsonl") == 100
    assert tail.events == []  # written out: the tail holds nothing more


def test_the_tail_stops_at_its_byte_cap_across_files(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        _events(tmp_path, name, 50, pad=1000)  # about 53 KB each
    tail = EventTail(tmp_path, 0.0, max_bytes=100_000)
    tail.poll()
    assert tail.over_quota is not None and "100000 bytes of events" in tail.over_quota
    assert len(tail.events) < 100


def test_a_run_over_a_quota_is_unknown_never_valid() -> None:
    run = StoredRun(
        path=Path("r"), spec={}, history=[object()], events=[], final={"over_quota": [  # type: ignore[list-item]
            "/tmp on n2 (64 MiB)",
            "the code under test wrote more than 100000 events (CHAOS_MAX_EVENTS); the rest...",
        ]}, schedule=[], problems=[],
    )  # fmt: skip
    r = completeness(run)
    assert r.verdict is Verdict.UNKNOWN
    assert "the code under test wrote more than its quota to /tmp on n2 (64 MiB)" in r.summary
    assert "more than 100000 events" in r.summary


class _Full:
    """A cluster whose /tmp on n1 fills after a moment (a Sized capability)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def over_quota(self) -> list[str]:
        return ["/tmp on n1 (64 MiB)"] if time.monotonic() - self.t0 > 0.3 else []


def test_the_watch_stops_the_workload_at_the_first_breach(tmp_path: Path) -> None:
    stop = threading.Event()
    watch = QuotaWatch(_Full(), EventTail(tmp_path, 0.0), stop).start()
    try:
        assert stop.wait(5), "the breach never stopped the run"
    finally:
        breaches = watch.close()
    assert breaches == ["/tmp on n1 (64 MiB)"]


def test_chaos_run_refuses_a_protocol_that_is_a_fifo_or_a_device(tmp_path: Path) -> None:
    for name, make in [
        ("fifo", lambda p: os.mkfifo(p)),
        ("zero", lambda p: p.symlink_to("/dev/zero")),
    ]:
        sol = tmp_path / name
        sol.mkdir()
        make(sol / "protocol.py")
        p = subprocess.run(
            [sys.executable, "-m", "chaos.cli", "run", "lab3", "--solution", str(sol),
             "--store", str(tmp_path / "store")],
            capture_output=True, text=True, timeout=60, cwd=REPO,
        )  # fmt: skip
        assert p.returncode == 3, p.stdout + p.stderr
        assert "not a regular file" in p.stderr and not (tmp_path / "store").exists()


def test_a_cut_short_runs_raw_events_are_read_up_to_the_tails_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaos.histories import jsonl

    monkeypatch.setattr(jsonl, "RAW_EVENTS_BYTES", 20_000)
    _events(tmp_path, "a.jsonl", 100)  # about 8 KB
    _events(tmp_path, "b.jsonl", 300)  # about 24 KB: past what is left
    loaded = jsonl.read_raw_events(tmp_path / "events", 0.0)
    assert len(loaded.records) == 100
    assert [p.message for p in loaded.problems] == ["not read: past 20000 bytes of events"]
