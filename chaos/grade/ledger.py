"""The grade's out folder on disk: its manifest and the ledger of finished runs.

    OUT/grade.json      what was asked (workload, seed, repeats, matrix, submissions folder): --resume
                        reads it back, so a resumed grade is the same grade
    OUT/runs.jsonl      one line per finished run, appended and fsynced as each arrives: a run
                        on this list is never done again
    OUT/runs/<student>/<config>/r<k>/   each run's folder, unpacked before its line is written

A line is written after its folder, so a line always has its folder; a torn last line (the
grader killed mid-write) is ignored and that run is done again.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from chaos.grade.task import RunResult
from chaos.histories.files import read_input
from chaos.histories.limits import MAX_INPUT_BYTES
from chaos.histories.store import read_json, write_json

MANIFEST = "grade.json"
LEDGER = "runs.jsonl"
RUNS = "runs"


def run_folder(student: str, config: str, repeat: int) -> str:
    """A run's folder, relative to the out folder (a control's ``control:`` becomes a folder
    name a file system takes everywhere)."""
    return f"{RUNS}/{student.replace(':', '-')}/{config}/r{repeat}"


class Ledger:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / LEDGER
        self._lock = threading.Lock()

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / MANIFEST, manifest)

    def read_manifest(self) -> dict[str, Any]:
        m = read_json(self.out / MANIFEST, None)
        if not isinstance(m, dict):
            raise ValueError(f"{self.out}: no {MANIFEST}; not a grade's out folder")
        return m

    def finished(self) -> dict[str, RunResult]:
        """Every run recorded, by key (a later line for the same key wins)."""
        out: dict[str, RunResult] = {}
        if not self.path.exists():
            return out
        data = read_input(self.path, MAX_INPUT_BYTES).decode("utf-8", errors="replace")
        for line in data.splitlines():
            try:
                r = RunResult.from_json(json.loads(line))
            except (ValueError, TypeError, KeyError):
                continue  # a torn last line: that run is done again
            out[r.key] = r
        return out

    def append(self, result: RunResult) -> None:
        line = json.dumps(result.to_json(), sort_keys=True) + "\n"
        with self._lock:
            self.out.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                # a torn last line must not swallow this one: start it on a line of its own
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = "\n" + line
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
