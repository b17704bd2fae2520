"""lab1's exactly-once accounting from etcd's own record, on hand-made records: every order write
one application of one night's change, every version of the lock record a grant, a renewal or a
release. Each attack has a record that must pass beside the one that must fail, and the failing
verdict names the revision."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaos.checkers.verdict import Verdict
from chaos.workloads.lab1 import accounting, checkers, keys
from chaos.workloads.lab1.keys import change_amount
from tests.unit.test_lab1_checkers import calm_run, final_of

LOCK = keys.lock(keys.JOB)


def check(final: dict[str, Any]) -> Any:
    return accounting.exactly_once(checkers.model_of([], [], final))


def calm() -> dict[str, Any]:
    return calm_run()[2]


def append(final: dict[str, Any], puts: dict[str, Any], deletes: tuple[str, ...] = ()) -> int:
    rec = final["record"]
    rev = rec["txns"][-1]["revision"] + 1 if rec["txns"] else rec["from_revision"]
    rec["txns"].append({"revision": rev, "puts": puts, "deletes": list(deletes)})
    return rev


def grant(node: str, token: int, at: float, until: float | None = None) -> dict[str, Any]:
    return {"name": keys.JOB, "locked_by": node, "token": token, "locked_at": at,
            "lock_until": until if until is not None else at + 3}  # fmt: skip


def test_a_calm_record_is_accounted() -> None:
    final = calm()
    append(final, {LOCK: grant("n1", 1, 100.0)})
    append(final, {LOCK: grant("n1", 1, 100.0, until=101.0)})  # release
    append(final, {LOCK: grant("n2", 2, 102.0)})
    append(final, {LOCK: grant("n2", 2, 102.0, until=106.0)})  # renewal
    got = check(final)
    assert got.verdict is Verdict.VALID, got.summary
    assert "each of the 4 order writes was one application" in got.summary
    assert "each of the 4 versions of the lock record a grant (2)" in got.summary


def test_an_order_balance_the_parser_refuses_is_invalid_naming_the_revision() -> None:
    final = calm()
    o1 = keys.order("o1")
    for form, says in (("+4", "'+4' is not a JSON integer"), (4.0, "4.0 is a float, not an int")):
        bad = copy.deepcopy(final)
        bad["record"]["txns"][0]["puts"][o1]["balance"] = form
        got = check(bad)
        assert got.verdict is Verdict.INVALID
        assert "Rev 10 wrote order o1 as" in got.summary and f"its balance {says}" in got.summary
    # the final read's balance goes through the same reading
    bad = copy.deepcopy(final)
    bad["orders"]["o1"]["balance"] = "+10"
    r = {c.checker: c for c in checkers.check([], calm_run()[1], bad)}
    assert r["every-night"].verdict is Verdict.INVALID
    assert "Order o1's balance is '+10': not a JSON integer" in r["every-night"].summary
    assert r["exactly-once"].verdict is Verdict.INVALID
    assert "The final read found order o1's balance at '+10'" in r["exactly-once"].summary
    assert check(final).verdict is Verdict.VALID


def test_an_order_written_twice_with_compensation_is_invalid() -> None:
    # night 1 applied to o1 twice, then the balance written back and the second application
    # record deleted: the final read shows one application and the right balance
    final = final_of([("o1", 1, 1, "n1"), ("o2", 1, 1, "n1"), ("o1", 1, 2, "n2"),
                      ("o1", 2, 3, "n2"), ("o2", 2, 3, "n2")], [1, 2], 2)  # fmt: skip
    amount = change_amount("o1", 1)
    second = next(
        k for k in final["record"]["txns"][2]["puts"] if k.startswith(keys.APPLIED_PREFIX)
    )
    row = dict(final["record"]["txns"][3]["puts"][keys.order("o1")])
    row["balance"] -= amount
    comp = append(final, {keys.order("o1"): row}, (second,))
    got = check(final)
    assert got.verdict is Verdict.INVALID
    assert f"rev {comp} deleted {second} (the application record)" in got.summary.lower()
    assert f"rev {comp} wrote order o1 (balance {row['balance']}) with no application" in (
        got.summary
    )
    assert (
        "order o1's change of night 1 was applied 2 times by etcd's record, at revisions 10, 12"
        in (got.summary)
    )


def test_an_application_that_moves_the_balance_by_another_amount_is_named() -> None:
    final = calm()
    puts = final["record"]["txns"][0]["puts"]
    puts[keys.order("o1")]["balance"] += 5
    got = check(final)
    assert got.verdict is Verdict.INVALID
    want = change_amount("o1", 1)
    assert f"the balance moved by {want + 5:+d} (0 → {want + 5})" in got.summary


def test_an_order_row_written_as_it_was_is_no_change() -> None:
    # a solution may create a row empty, or rewrite it unchanged: nothing was applied
    final = calm()
    append(final, {keys.order("o3"): {"order": "o3", "balance": 0, "last_token": 0, "night": 0}})
    row = dict(final["record"]["txns"][2]["puts"][keys.order("o1")])  # o1 as last written
    append(final, {keys.order("o1"): row})
    assert check(final).verdict is Verdict.VALID, check(final).summary
    row = {**row, "last_token": row["last_token"] + 1}  # not as it was: a write with no application
    rev = append(final, {keys.order("o1"): row})
    got = check(final)
    assert got.verdict is Verdict.INVALID and f"Rev {rev} wrote order o1" in got.summary


def test_an_application_record_without_its_order_write_is_named() -> None:
    final = calm()
    key = keys.applied("o1", 3, 9, "n3", "abcd")
    append(final, {key: {"order": "o1", "night": 3, "token": 9, "amount": 1, "node": "n3"}})
    got = check(final)
    assert got.verdict is Verdict.INVALID and "without writing order o1" in got.summary


@pytest.mark.parametrize(
    "version,says",
    [
        ({"name": keys.JOB, "locked_by": "n1", "lock_until": 1.0, "locked_at": 0.0},
         "…: no token"),
        ({**grant("n1", 1, 0.0), "token": "2"}, "its token '2' is not a JSON integer"),
        ({**grant("n1", 1, 0.0), "lock_until": "soon"}, "lock_until and locked_at must be numbers"),
        ("n1", "not a lock record"),
    ],
)  # fmt: skip
def test_an_unknown_lock_record_shape_is_invalid(version: Any, says: str) -> None:
    final = calm()
    rev = append(final, {LOCK: version})
    got = check(final)
    assert got.verdict is Verdict.INVALID
    assert f"Rev {rev} wrote the lock record {LOCK} as" in got.summary
    assert says.strip() in got.summary, got.summary


def test_a_lock_change_that_is_no_grant_renewal_or_release_is_named() -> None:
    final = calm()
    append(final, {LOCK: grant("n1", 2, 100.0)})
    rev = append(final, {LOCK: grant("n2", 2, 103.0)})
    got = check(final)
    assert got.verdict is Verdict.INVALID
    assert (
        f"Rev {rev} gave the lock to n2 (locked_at 103.0) under the token 2 that n1" in got.summary
    )
    final = calm()
    append(final, {LOCK: grant("n1", 5, 100.0)})
    rev = append(final, {LOCK: grant("n2", 4, 103.0)})
    got = check(final)
    assert f"Rev {rev} wrote the lock record with token 4 after token 5" in got.summary


def test_deletes_and_foreign_keys_are_named() -> None:
    final = calm()
    append(final, {LOCK: grant("n1", 1, 100.0)})
    rev = append(final, {}, (LOCK,))
    got = check(final)
    assert got.verdict is Verdict.INVALID
    assert f"Rev {rev} deleted {LOCK} (the lock record)" in got.summary
    final = calm()
    rev = append(final, {keys.PREFIX + "shadow/o1": 4})
    got = check(final)
    assert f"Rev {rev} wrote /lab1/shadow/o1, which is no key of lab1's layout" in got.summary


@pytest.mark.parametrize(
    "change,says",
    [
        ({"truncated": True}, "was cut after 500000 events"),
        ({"error": "etcd's history was compacted after revision 10: ..."}, "compacted"),
        ({"from_revision": None}, "does not say which revision it starts from"),
    ],
)
def test_a_record_cut_compacted_or_unanchored_is_unknown(change: dict[str, Any], says: str) -> None:
    final = calm()
    final["record"].update(change)
    got = check(final)
    assert got.verdict is Verdict.UNKNOWN and says in got.summary
    del final["record"]
    got = check(final)
    assert got.verdict is Verdict.UNKNOWN and "has no etcd record" in got.summary
