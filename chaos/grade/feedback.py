"""``chaos feedback GRADE_DIR --out DIR``: one pack per student, from a finished grade.

    DIR/<student>/index.html          the student's page (chaos.grade.feedback_page)
    DIR/<student>/results.json        the same, Gradescope's results.json (chaos.grade.exports)
    DIR/<student>/runs/<config>/r<k>/ each of the student's runs, its page re-rendered there
    DIR/<student>/schedules/<c>.yaml  a configuration's schedule file, which its command names
    DIR/<student>.zip                 that folder, to hand out
    DIR/gradebook.csv                 a row per student, for an LMS (instructor's: in no zip)

A pack holds that student's runs only, read from the grade's folder through the guarded loaders
(a link or a device in a run folder is never followed or copied). The instructor's paths are
replaced in every copied text file (chaos.grade.scrub), the runs' pages are drawn again from the
copies, and the written pack is read back whole: one that still names the grading machine's
paths or another student's folder is deleted and refused, never handed out.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.core.capabilities import ReportSections
from chaos.grade import exports, feedback_page, ledger
from chaos.grade.report import JSON_NAME
from chaos.grade.scrub import Scrub
from chaos.grade.story import Student, config_story
from chaos.grade.task import RunResult
from chaos.histories.files import UnsafeFile, open_regular, write_atomic
from chaos.histories.limits import InputError
from chaos.histories.store import read_json
from chaos.report import render
from chaos.report.zipstream import write_zip
from chaos.workloads import registry

__all__ = ["FeedbackOutcome", "PackLeak", "check_out", "write_feedback"]

INDEX = "index.html"
GRADEBOOK = "gradebook.csv"
# the files of a run copied as text (their paths scrubbed); anything else is copied as it is
TEXT = frozenset({".json", ".jsonl", ".html", ".log", ".edn", ".svg", ".txt", ".yaml", ".csv"})
# a run's file larger than this is left out of a pack (a run's page names what it lacks)
MAX_FILE_BYTES = 64 << 20


class PackLeak(Exception):
    """A written pack still names an instructor's path or another student: refused."""


@dataclass(frozen=True, slots=True)
class FeedbackOutcome:
    out: Path
    zips: dict[str, Path]
    gradebook: Path


def _read(path: Path) -> Any:
    try:
        return read_json(path, None)
    except (InputError, OSError, ValueError) as e:
        raise ValueError(f"{path}: unreadable ({e})") from None


def load(grade_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[RunResult]]:
    """The grade's manifest, its class table's rows and every finished run (ValueError when the
    folder is not a finished grade)."""
    manifest = ledger.Ledger(grade_dir).read_manifest()
    table = _read(grade_dir / JSON_NAME)
    if not isinstance(table, dict) or not isinstance(table.get("rows"), list):
        raise ValueError(f"{grade_dir}: no {JSON_NAME}; not a finished grade")
    rows = [r for r in table["rows"] if isinstance(r, dict)]
    return manifest, rows, list(ledger.Ledger(grade_dir).finished().values())


def students(
    grade_dir: Path,
    manifest: Mapping[str, Any],
    rows: Sequence[dict[str, Any]],
    results: Sequence[RunResult],
) -> list[Student]:
    """The class's students (no control row), each with a story per configuration."""
    configs = [c for c in manifest.get("configs", []) if isinstance(c, dict) and "name" in c]
    by_student: dict[str, list[RunResult]] = {}
    for r in results:
        by_student.setdefault(r.student, []).append(r)
    out = []
    for row in rows:
        if row.get("kind") != "student":
            continue
        name = str(row["name"])
        schedules = {
            f"schedules/{c['name']}.yaml": str(c["run"]["schedule"])
            for c in configs
            if isinstance(c.get("run"), dict) and c["run"].get("schedule")
        }
        stories = tuple(
            config_story(
                grade_dir,
                c,
                [r for r in by_student.get(name, []) if r.config == c["name"]],
                f"schedules/{c['name']}.yaml"
                if f"schedules/{c['name']}.yaml" in schedules
                else None,
            )
            for c in configs
        )
        score = row.get("score")
        out.append(
            Student(
                name=name,
                workload=str(manifest.get("workload", manifest.get("lab", ""))),
                score=float(score) if isinstance(score, int | float) else None,
                reason=str(row["reason"]) if row.get("reason") else None,
                stories=stories,
                schedules=schedules,
            )
        )
    return out


def _scrub_for(
    grade_dir: Path, rows: Sequence[dict[str, Any]], manifest: Mapping[str, Any], name: str
) -> Scrub:
    mine = next(r for r in rows if r.get("name") == name)
    others: list[str] = []
    for r in rows:
        if r.get("name") == name:
            continue
        other = str(r.get("name", ""))
        others.append(f"runs/{other.replace(':', '-')}/")
        if r.get("kind") == "student" and r.get("solution"):
            others += [str(r["solution"]), f"submissions/{Path(str(r['solution'])).name}"]
    return Scrub(
        solution=str(mine.get("solution") or ""),
        grade_dir=str(grade_dir.resolve()),
        submissions=str(manifest.get("submissions") or ""),
        others=tuple(others),
    )


def _contributors(workload: str) -> Sequence[Any]:
    try:
        wl = registry.get(workload)
    except ValueError:
        return ()
    return tuple(wl.report_sections()) if isinstance(wl, ReportSections) else ()


def _copy_file(src: Path, dest: Path, scrub: Scrub) -> None:
    try:
        fd = open_regular(src)
    except (UnsafeFile, OSError):
        return  # a link, a FIFO, a device: never followed or copied
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
            return
        data = fh.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
    if src.suffix in TEXT:
        data = scrub.text(data.decode("utf-8", errors="replace")).encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)


def copy_run(src: Path, dest: Path, scrub: Scrub, workload: str, kept_as: str) -> None:
    """The run at ``src`` copied to ``dest`` with its paths scrubbed, its page drawn again there
    (naming ``kept_as``, the run's folder inside the pack)."""
    for dirpath, dirnames, filenames in os.walk(src):  # os.walk follows no link to a folder
        dirnames[:] = sorted(d for d in dirnames if d not in ("plots", "live", "mounts"))
        for name in sorted(filenames):
            if name == "report.html" and Path(dirpath) == src:
                continue  # drawn again below, from the scrubbed copy
            p = Path(dirpath) / name
            _copy_file(p, dest / p.relative_to(src), scrub)
    page = render(dest, _contributors(workload), kept_at=Path(kept_as))
    page.write_text(scrub.text(page.read_text(encoding="utf-8")), encoding="utf-8")


def _schedules(folder: Path, student: Student, scrub: Scrub) -> None:
    for rel, src in student.schedules.items():
        _copy_file(Path(src), folder / rel, scrub)


def _verify(folder: Path, scrub: Scrub) -> None:
    blobs = []
    for dirpath, _, filenames in os.walk(folder):
        for name in filenames:
            p = Path(dirpath) / name
            blobs.append((str(p.relative_to(folder)), p.read_bytes()))
            blobs.append((f"{p.relative_to(folder)} (name)", str(p.relative_to(folder)).encode()))
    leaks = scrub.leaks(blobs)
    if leaks:
        raise PackLeak(f"{folder.name}'s pack refused: it names " + "; ".join(leaks[:5]))


def write_pack(grade_dir: Path, out: Path, student: Student, scrub: Scrub) -> Path:
    """The student's folder and its zip; returns the zip's path."""
    folder = out / student.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for story in student.stories:
        for r in story.results:
            if r.run_dir and (grade_dir / r.run_dir).is_dir():
                kept = feedback_page.run_folder(story.config, r.repeat)
                copy_run(grade_dir / r.run_dir, folder / kept, scrub, student.workload, kept)
    _schedules(folder, student, scrub)
    write_atomic(folder / INDEX, scrub.text(feedback_page.page(student, folder)).encode())
    exports.write_gradescope(folder / exports.GRADESCOPE, student, scrub.text)
    zpath = out / f"{student.name}.zip"
    try:
        _verify(folder, scrub)
    except PackLeak:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    tmp = zpath.with_name(f".{zpath.name}.tmp")
    with open(tmp, "wb") as fh:
        write_zip(folder, fh)
    os.replace(tmp, zpath)
    return zpath


def check_out(out: Path) -> None:
    """ValueError for a folder that holds other files than an earlier feedback's (writing the
    packs again replaces those)."""
    if out.is_dir() and any(out.iterdir()) and not (out / GRADEBOOK).exists():
        raise ValueError(f"{out}: not empty and not a feedback folder; choose another folder")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: not a folder")


def write_feedback(
    grade_dir: Path, out: Path, progress: Callable[[str], None] = lambda m: None
) -> FeedbackOutcome:
    """A pack per student of the grade in ``grade_dir``, and the gradebook, into ``out``
    (ValueError for a folder that is not a finished grade, or an ``out`` that holds other
    files)."""
    manifest, rows, results = load(grade_dir)
    class_ = students(grade_dir, manifest, rows, results)
    check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    zips = {}
    for s in class_:
        zips[s.name] = write_pack(grade_dir, out, s, _scrub_for(grade_dir, rows, manifest, s.name))
        progress(f"{s.name}: {zips[s.name]}")
    write_atomic(out / GRADEBOOK, exports.gradebook(class_).encode())
    return FeedbackOutcome(out=out, zips=zips, gradebook=out / GRADEBOOK)
