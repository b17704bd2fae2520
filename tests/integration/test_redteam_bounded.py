"""Red team, real runs: solutions that attack chaos itself (issue 29, "chaos itself can be hurt"
and "the aim can be blinded"). Each is ``tests/fixtures/redteam/bounded_control`` — a plain bug:
every task's amount reaches the counter twice — plus one trick aimed at the orchestrator:

- ``bounded_deep_event``: an event line nested 30,000 deep (main: exit 5, ``RecursionError`` out
  of chaos/core/live.py);
- ``bounded_deep_value``: a task record nested 2,000 deep in etcd (main: every final read failed,
  and complete-record still said the final state was read);
- ``bounded_big_watch``: 1,500 writes of 8 KB values, so that etcd answers the record's watch
  with 8 MB at once (main: grpc's 4 MB default refused it, the record was lost);
- ``bounded_large_record`` (``-m slow``): 30,000 writes of 3 KB values nested 1,500 deep, 90 MB
  of etcd's 128 MiB quota (main: 10,732 such revisions took the orchestrator to 998 MB);
- ``bounded_file_flood``: 300,000 empty files tried in the events folder (main: every poll of
  the tail listed them all, seconds each).

Each must exit with a verdict (never 5), be judged not valid — invalid where the record still
shows the bug, unknown only where the trick took the evidence, with the reason — while the control
is invalid for the same bug; the orchestrator's peak RSS is measured with ``/usr/bin/time``. The
same attacks on hand-made inputs are tests/unit/test_bounded_chaos.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chaos.histories.limits import MAX_EVENT_FILES
from tests.integration.conftest import REPO, run_dir_from

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
FAST = ["--seed", "5", "--recovery-timeout", "10", "--time-limit", "15", "-q", "--no-html"]
# load mode: the workload lasts while the trick runs (a flood, 30,000 writes)
LOAD = ["--seed", "5", "--recovery-timeout", "10", "--rate", "2", "-q", "--no-html"]
MiB = 1 << 20
RSS_BOUND = 300 * MiB
# the control's bug, as each run must still show it (etcd's record and the final read)
BUG = {
    "counter": r"applied more than once",
    "exactly-once": r"rev \d+ changed the counter by \+\d+ \(\d+ → \d+\) in a transaction that "
    r"wrote the keys of t\d, but t\d's is \+\d+",
}


class Run:
    def __init__(self, name: str, code: int, run: Path, out: str, peak: int) -> None:
        self.name, self.code, self.run, self.out, self.peak = name, code, run, out, peak
        got = json.loads((run / "results.json").read_text())["results"]
        self.results: dict[str, Any] = {r["checker"]: r for r in got}
        self.final: dict[str, Any] = json.loads((run / "final.json").read_text())
        self.spec: dict[str, Any] = json.loads((run / "spec.json").read_text())

    def says(self, checker: str, verdict: str, pattern: str) -> None:
        """``checker``'s verdict, and ``pattern`` in its summary or one of its findings (a
        summary names the first few)."""
        r = self.results[checker]
        assert r["verdict"] == verdict, (self.name, checker, r["summary"][:2000])
        found = [r["summary"], *(str(a.get("why", "")) for a in r.get("anomalies") or [])]
        assert any(re.search(pattern, f) for f in found), (self.name, checker, r["summary"][:2000])


def _run(name: str, store: Path, options: list[str]) -> Run:
    """One ``chaos run`` under ``/usr/bin/time``, which gives the orchestrator's peak RSS."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, sys.executable, "-m", "chaos.cli",
             "run", "lab3", "--solution", str(REDTEAM / name), *options, "--store", str(store)],
            capture_output=True, text=True, timeout=900, cwd=REPO,
        )  # fmt: skip
        peak = int(Path(rss.name).read_text().split()[-1]) * 1024
    out = p.stdout + p.stderr
    assert p.returncode in (0, 1, 2), f"{name}: exit {p.returncode}\n{out}"  # never 5
    return Run(name, p.returncode, run_dir_from(p), out, peak)


CI = {
    "bounded_control": FAST,
    "bounded_deep_event": FAST,
    "bounded_deep_value": FAST,
    "bounded_big_watch": FAST,
    "bounded_file_flood": [*LOAD, "--time-limit", "30"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    store = tmp_path_factory.mktemp("bounded-store")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {n: pool.submit(_run, n, store, opts) for n, opts in CI.items()}
        return {n: f.result() for n, f in futures.items()}


def _shows_the_bug(r: Run) -> None:
    assert r.code == 1, f"{r.name}: exit {r.code}\n{r.out}"
    for checker, pattern in BUG.items():
        r.says(checker, "invalid", pattern)


def test_the_control_is_invalid_for_its_bug_and_its_record_complete(runs: dict[str, Run]) -> None:
    r = runs["bounded_control"]
    _shows_the_bug(r)
    r.says("complete-record", "valid", r"the final state read")


def test_a_deep_event_line_is_skipped_and_named_not_a_crash(runs: dict[str, Run]) -> None:
    r = runs["bounded_deep_event"]
    _shows_the_bug(r)  # main: exit 5
    warning = (
        "events folder: n1-deep.jsonl: a line skipped, values nest more than 100 levels deep "
        "(chaos reads 100)"
    )
    assert warning in r.spec["warnings"], r.spec.get("warnings")
    r.says("complete-record", "valid", r"the final state read")


def test_a_deep_etcd_value_is_named_by_revision_and_the_final_reads_succeed(
    runs: dict[str, Run],
) -> None:
    r = runs["bounded_deep_value"]
    assert "error" not in r.final, r.final.get("error")  # main: RecursionError, no final state
    assert r.final["tasks"]["deep"] is None  # read, and no task's status
    _shows_the_bug(r)
    r.says("exactly-once", "invalid", r"rev \d+ wrote /lab3/tasks/deep \(a task\) as a value "
           r"nested more than 32 levels deep \(not kept\): too deep to read")  # fmt: skip
    r.says("complete-record", "valid", r"the final state read")


def test_a_watch_answer_over_4_mb_is_read_whole(runs: dict[str, Run]) -> None:
    r = runs["bounded_big_watch"]
    rec = r.final["record"]
    assert rec["error"] is None and rec["truncated"] is False  # main: RESOURCE_EXHAUSTED
    blobs = [t for t in rec["txns"] if "/lab3/blob" in t["puts"]]
    assert all(t["puts"]["/lab3/blob"] == {"chaos_truncated_bytes": 8192} for t in blobs)
    # etcd answers a watch with up to 1,000 revisions at once: the first answer held more than
    # 4 MiB of 8 KB writes — grpc's default limit, which cut the record on main (the services'
    # own writes interleave, so how many of the 1,000 are blobs varies with the load; writes
    # after the end marker are outside the record)
    first = [t for t in blobs if t["revision"] < rec["from_revision"] + 1000]
    assert len(first) * 8192 > 4 << 20, len(first)
    _shows_the_bug(r)
    r.says("exactly-once", "invalid", r"rev \d+ wrote /lab3/blob, which is no key of lab3's layout")
    r.says("complete-record", "valid", r"the final state read")


def test_a_flood_of_files_stops_at_the_folders_count_and_the_run_names_it(
    runs: dict[str, Run],
) -> None:
    r = runs["bounded_file_flood"]
    made = [int(p.read_text()) for p in (r.run / "live" / "claims").glob("redteam-flood-*.txt")]
    assert made and made[0] < MAX_EVENT_FILES, made  # the kernel's ENOSPC, not 300,000
    assert len(list((r.run / "live" / "events").iterdir())) <= MAX_EVENT_FILES
    breach = f"live/events ({MAX_EVENT_FILES} files)"
    assert breach in r.final["over_quota"], r.final.get("over_quota")
    r.says("complete-record", "unknown", re.escape(f"wrote more than its quota to {breach}"))
    # never valid: the bug where the workload got that far, else unknown with the reason
    assert r.code in (1, 2), r.out
    if r.code == 1:
        _shows_the_bug(r)


@pytest.mark.slow  # about 2 minutes: 30,000 writes in load mode, then a 90 MB record
def test_a_record_near_etcds_quota_leaves_chaos_under_300_mb(tmp_path: Path) -> None:
    r = _run("bounded_large_record", tmp_path, [*LOAD, "--time-limit", "60"])
    assert r.peak <= RSS_BOUND, f"the orchestrator's peak RSS was {r.peak / MiB:.0f} MiB"
    rec = r.final["record"]
    assert rec["error"] is None, rec["error"]
    big = sum(1 for t in rec["txns"] for k in t["puts"] if k.startswith("/lab3/big/"))
    assert big >= 29_000, big  # the record holds the writes, each value as its reason
    _shows_the_bug(r)
    r.says("exactly-once", "invalid", r"rev \d+ wrote /lab3/big/\d+, which is no key")
