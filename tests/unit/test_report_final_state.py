"""Every value a person reads is rendered by its type (issue 32): the etcd proxy's journal as a
table of operations, wall-clock fields as seconds into the run, a seed as a number everywhere,
the fault named wherever a run is."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from chaos.cli import main
from chaos.histories.safe_text import shortened
from chaos.histories.store import faults_of
from chaos.report import render
from chaos.report.final_state import final_section, run_origin
from chaos.report.html import fmt_value
from chaos.report.serve import index_page
from tests.fixtures import synthetic_runs as runs

SEED = 1783085369  # 2026-07-03 13:29:29 UTC, were it a time: it is not
ORIGIN = 1796400120.0
LOCK = {"lock_until": ORIGIN + 3.8, "locked_at": ORIGIN + 0.8, "locked_by": "n3", "token": 1}


def _entry(**kw: Any) -> dict[str, Any]:
    base = {"method": "KV/Txn", "node": "n1", "outcome": "ok", "seq": 1, "mono": 200.0}
    return {**base, **kw}


FINAL = {
    "lock": LOCK,
    "seed_like": SEED,  # an undeclared field: a number, whatever its size
    "journal": {
        "source": "etcd-proxy",
        "nodes": {"n1": 2, "n3": 1},
        "entries": [
            _entry(
                node="n3",
                wall=ORIGIN + 0.8,
                time=0.8,
                revision=4,
                succeeded=True,
                puts=[{"key": "/lab1/locks/r", "lease": 0, "value": json.dumps(LOCK)}],
                deletes=[],
            ),
            _entry(
                method="Lease/LeaseGrant",
                wall=ORIGIN + 1.5,
                time=1.5,
                revision=4,
                lease=1489462505240355082,
                ttl=2,
            ),
            _entry(wall=ORIGIN + 2.0, time=2.0, revision=4, succeeded=False, puts=[], deletes=[]),
            # another node's proxy journals its own entries, after the first node's
            _entry(
                node="n2",
                method="Lease/LeaseRevoke",
                wall=ORIGIN + 0.1,
                time=0.1,
                revision=3,
                lease=7,
            ),
        ],
    },
    "record": {
        "source": "etcd",
        "txns": [{"revision": 4, "puts": {"/lab1/locks/r": LOCK}, "deletes": ["/lab1/old"]}],
    },
    "many": {f"t{i}": "completed" for i in range(40)},
}


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_the_journal_is_a_table_of_operations_with_decoded_values() -> None:
    got = final_section(FINAL, {})
    text = _text(got)
    assert '{"' not in got and "{&quot;" not in got, "raw JSON in the final state"
    rows = re.findall(r"<tr>(.*?)</tr>", got[got.index("time (s)") :])
    assert re.search(r"0\.100\s+n2\s+lease revoke\s+3", _text(rows[0])), "not in time order"
    first = _text(rows[1])
    # time into the run, node, operation, revision, key, the decoded value's fields
    assert re.search(r"0\.800\s+n3\s+txn\s+4\s+/lab1/locks/r\s+lock_until 3\.800 s", first), first
    assert "locked_at 0.800 s" in first and "locked_by n3" in first
    assert "lease grant, ttl 2 s" in text and "lease 1489462505240355082" in text
    assert "txn (compare failed: its other branch)" in text
    assert "4 operation(s) the services sent to etcd (n1 2, n3 1)" in text
    assert "1 transaction(s) in etcd's own history" in text and "/lab1/old" in text
    # the declared wall-clock fields read as seconds into the run; the rest stay numbers
    assert "3.800 s" in text and str(SEED) in text and "2026-" not in text
    # a field of many values is folded under its gist
    assert "<details><summary>40 entries (completed 40)</summary>" in got


def test_without_a_journal_the_start_comes_from_the_spec_and_else_times_are_utc() -> None:
    spec = {"started_at": "2026-12-04T16:02:00+0000"}
    assert run_origin({"lock": LOCK}, spec) == ORIGIN
    assert re.search(r"lock_until\s+3\.800 s", _text(final_section({"lock": LOCK}, spec)))
    alone = _text(final_section({"lock": LOCK}, {}))
    assert re.search(r"lock_until\s+2026-12-04 16:02:03\.800 UTC", alone) and "are UTC" in alone


def test_a_seed_is_a_number_everywhere(tmp_path: Path) -> None:
    assert fmt_value(SEED) == str(SEED) and fmt_value(SEED + 0.5) == f"{SEED}.5"
    store = tmp_path / "store"
    run_dir = runs.valid_lab3(store)
    spec = json.loads((run_dir / "spec.json").read_text())
    spec.update(seed=SEED, nemesis=[], triggers=["kill relay before publish"])
    spec["command"] = f"chaos run lab3 --trigger 'kill relay before publish' --seed {SEED}"
    (run_dir / "spec.json").write_text(json.dumps(spec))
    page = _text(render(run_dir).read_text())
    header = page[: page.index("Checkers")]
    assert f"seed {SEED}" in header and "trigger 'kill relay before publish'" in header
    params = page[page.index("Parameters and reproduction") :]
    assert re.search(rf"seed\s+{SEED}", params) and f"--seed {SEED}" in params
    assert re.search(r"fault\s+trigger 'kill relay before publish'", params)
    assert "2026-07-03" not in page
    index = _text(index_page(store))
    assert str(SEED) in index and "trigger 'kill relay before publish'" in index
    assert "2026-07-03" not in index
    listed = CliRunner().invoke(main, ["ls", "--store", str(store)]).output
    assert f"seed={SEED}" in listed and "trigger 'kill relay before publish'" in listed


def test_the_fault_of_a_run_is_named_from_every_field_that_asks_for_one() -> None:
    assert faults_of({"nemesis": ["pause", "kill:broker"]}) == "pause,kill:broker"
    assert faults_of({"nemesis": [], "triggers": ["pause worker on delivery"]}) == (
        "trigger 'pause worker on delivery'"
    )
    assert faults_of({"nemesis": ["lost-publish-ack"], "scenario": "lost-publish-ack"}) == (
        "lost-publish-ack, scenario lost-publish-ack"
    )
    assert faults_of({"schedule": {"steps": []}}) == "schedule"
    assert faults_of({"nemesis": [], "triggers": [], "scenario": None}) == ""


def test_a_progress_line_is_shortened_at_a_word_never_mid_number() -> None:
    said = "invalid (lease-authors: 2 writes at revisions 20, 23 by a node without the lock)"
    cut = shortened(said, 50)
    assert cut.endswith("…") and len(cut) <= 50
    assert cut == "invalid (lease-authors: 2 writes at revisions…"  # not "… 20, 2…"
    assert shortened("short", 50) == "short"
