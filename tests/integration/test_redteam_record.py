"""Red team, real runs: solutions that attack etcd's record of the run itself (tests/fixtures/
redteam/). Each writes what a checker reads in a form it might skip — a counter or a balance no
strict reader parses, a counter deleted and written back, a shadow counter under the lab's prefix,
increments in transactions of their own, compensating double applies, a compacted history — and
each must be judged not valid, with the revision or the task named by the checker that caught it.
The unit tests (tests/unit/test_lab3_accounting.py, test_lab1_accounting.py) hold every class on
hand-made records; these prove the attacks work the same on real etcd.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"

# solution -> (lab, the exit code, {checker: what its summary must say (a regex)})
CASES: dict[str, tuple[str, int, dict[str, str]]] = {
    "counter_plus_string": ("lab3", 1, {
        "exactly-once": r"rev \d+ wrote the counter as '\+\d+': not a JSON integer",
        "counter": r"the final read found the counter as '\+10': not a JSON integer",
        "double-apply": r"rev \d+ wrote the counter as '\+\d+'",
    }),
    "compensating_double": ("lab3", 1, {
        "exactly-once": r"task t1 was applied 2 times.*task t2 was applied 2 times.*task t3 was "
                        r"completed \(rev \d+ wrote its task record completed\) but no transaction",
    }),
    # the nodes' etcd proxies refuse a compaction (issue 29): the record stays whole and the
    # attempt is named; a record compacted all the same is unknown (test_lab3_accounting.py)
    "compaction": ("lab3", 1, {
        "etcd-scope": r"refused KV/Compact",
    }),
    "order_twice_compensated": ("lab1", 1, {
        "exactly-once": r"Rev \d+ deleted /lab1/applied/o1/000001/\S+ \(the application record\).*"
                        r"order o1's change of night 1 was applied 2 times by etcd's record",
    }),
    "counter_delete_rewrite": ("lab3", 1, {
        "exactly-once": r"rev \d+ deleted the counter",
        "double-apply": r"rev \d+ deleted the counter",
    }),
    "shadow_counter": ("lab3", 1, {
        "exactly-once": r"rev \d+ wrote /lab3/shadow-counter, which is no key of lab3's layout",
    }),
    "apply_outside_txn": ("lab3", 1, {
        "exactly-once": r"rev \d+ changed the counter by \+\d+ \(\d+ → \d+\) in a transaction "
                        r"that wrote no task's keys",
    }),
    # issue 20's first case as measured on main (valid there): compensated and unparseable
    "issue20_compensated_unparseable": ("lab3", 1, {
        "exactly-once": r"rev \d+ wrote the counter as '\+\d+': not a JSON integer.*task t\d was "
                        r"completed \(rev \d+ wrote its task record completed\) but no transaction",
        "double-apply": r"rev \d+ wrote the counter as '\+\d+'",
        "counter": r"the final read found the counter as '\+10'",
    }),
    "counter_float": ("lab3", 1, {
        "exactly-once": r"rev \d+ wrote the counter as \d+\.0: a float, not an integer",
        "counter": r"the final read found the counter as 10\.0: a float",
    }),
    "lock_token_string": ("lab1", 1, {
        "exactly-once": r"Rev \d+ wrote the lock record /lab1/locks/reconciliation as .*its token "
                        r"'1' is not a JSON integer",
    }),
    "order_balance_string": ("lab1", 1, {
        "exactly-once": r"Rev \d+ wrote order o\d as .*its balance '\+\d+' is not a JSON integer",
        "every-night": r"balance is '\+\d+': not a JSON integer",
    }),
}  # fmt: skip
CI = ["counter_plus_string", "compensating_double", "compaction", "order_twice_compensated"]
SLOW = [n for n in CASES if n not in CI]


def _run(name: str, seed: int, store: Path) -> tuple[str, int, Path, str]:
    lab = CASES[name][0]
    p = chaos("run", lab, "--solution", str(REDTEAM / name), "--seed", str(seed), "-q",
              store=store, timeout=240)  # fmt: skip
    return name, p.returncode, run_dir_from(p), p.stdout + p.stderr


def _judge(name: str, code: int, run: Path, out: str) -> None:
    _, want, says = CASES[name]
    assert code == want, f"{name}: exit {code}\n{out}"
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    if "etcd-scope" not in says:  # an attempt refused leaves the record whole
        assert results["exactly-once"]["verdict"] != "valid"
    for checker, pattern in says.items():
        r = results[checker]
        assert r["verdict"] == ("unknown" if want == 2 else "invalid"), (name, checker, r)
        assert re.search(pattern, r["summary"]), (name, checker, r["summary"])


def _all(names: list[str], seeds: list[int], store: Path) -> list[tuple[str, int, Path, str]]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(lambda ns: _run(ns[0], ns[1], store),
                             [(n, s) for n in names for s in seeds]))  # fmt: skip


def test_attacks_on_the_record_are_caught_and_named(tmp_path: Path) -> None:
    done = _all(CI, [5], tmp_path / "store")
    for name, code, run, out in done:
        _judge(name, code, run, out)
    # the offline re-check reads the same record to the same verdicts
    name, code, run, _ = done[0]
    again = chaos("check", str(run), store=None, timeout=120)
    assert again.returncode == code, again.stdout + again.stderr
    assert "exactly-once" in again.stdout


@pytest.mark.slow
@pytest.mark.parametrize("names", [pytest.param(SLOW, id="other-classes"),
                                   pytest.param(CI, id="more-seeds")])  # fmt: skip
def test_attacks_on_the_record_more_classes_and_seeds(names: list[str], tmp_path: Path) -> None:
    seeds = [5] if names is SLOW else [1, 2]
    for name, code, run, out in _all(names, seeds, tmp_path / "store"):
        _judge(name, code, run, out)
