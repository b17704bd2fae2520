"""Exactly-once accounting of lab3 from etcd's own record, on hand-made records.

Each attack a solution can make on the record — a counter no reader can parse, a deleted counter,
compensating double applies, a shadow counter under the lab's prefix, an apply in a transaction of
its own, a record cut or compacted — has a record that must pass beside the one that must fail,
and the failing verdict names the revision or the task.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaos.checkers.verdict import Verdict
from chaos.workloads.lab3 import checkers, keys
from chaos.workloads.systems import record_values
from tests.unit.test_lab3_checkers import (
    ALL_DONE,
    AMOUNTS,
    ONCE_EACH,
    apply,
    creates,
    final_state,
    ops,
    record,
    run,
)

CREATES = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))


def verdicts(rec: dict[str, Any], counter: int = 10) -> dict[str, Any]:
    r = run(CREATES, [], final_state(counter, ALL_DONE, rec))
    return {c.checker: c for c in checkers.check_run(r)}


def exactly_once(rec: dict[str, Any], counter: int = 10, **final: Any) -> Any:
    return checkers.exactly_once(run(CREATES, [], {**final_state(counter, ALL_DONE, rec), **final}))


def completed_only(task: str) -> dict[str, Any]:
    """A complete() that wrote the task's result and marked it completed, counter untouched."""
    puts = apply(task, 0)
    del puts[keys.COUNTER]
    return puts


def test_the_reference_record_is_accounted_exactly_once() -> None:
    got = exactly_once(ONCE_EACH)
    assert got.verdict is Verdict.VALID, got.summary
    assert "each of the 3 completed task(s) was applied exactly once" in got.summary
    assert "(+10) is their sum" in got.summary
    assert got.stats["findings"] == 0 and got.stats["applies"] == 3


# ---------------------------------------------------------------- one parser


@pytest.mark.parametrize(
    "raw", [b"+10", b" 10", b"10 ", b"1e1", b"10.0", b"true", b"0x0a", b'"10"', b"010", b"1" * 5000]
)
def test_the_final_read_and_the_replay_refuse_the_same_values(raw: bytes) -> None:
    # the final read decodes the counter's bytes; the replay decodes each write's bytes: the same
    # two functions, so what one refuses the other refuses
    value = record_values.decode(raw)
    assert record_values.as_int(value) is None
    assert record_values.int_problem(value)


@pytest.mark.parametrize("raw,n", [(b"10", 10), (b"-3", -3), (b"0", 0)])
def test_a_canonical_json_integer_is_read_alike_by_both(raw: bytes, n: int) -> None:
    assert record_values.as_int(record_values.decode(raw)) == n


def test_a_counter_stored_unparseable_is_invalid_naming_the_revision() -> None:
    # the attack of issue 20: the final read's int() took "+10", the replay skipped every write
    bad = record(*(dict(apply(t, 0), **{keys.COUNTER: f"+{c}"}) for t, c in
                   (("t1", 2), ("t2", 5), ("t3", 10))))  # fmt: skip
    got = verdicts(bad)
    once = got["exactly-once"]
    assert once.verdict is Verdict.INVALID
    assert "rev 5 wrote the counter as '+2': not a JSON integer" in once.summary
    assert {a["revision"] for a in once.anomalies if a.get("kind") == "unreadable"} == {5, 6, 7}
    # and the double-apply no longer says "at most once (0 applies in 0 changes)"
    assert got["double-apply"].verdict is Verdict.INVALID
    assert "rev 5 wrote the counter as '+2'" in got["double-apply"].summary
    assert verdicts(ONCE_EACH)["double-apply"].verdict is Verdict.VALID


def test_issue_20s_compensated_unparseable_run_is_invalid_naming_writes_and_tasks() -> None:
    # as measured on main, where it was valid: t1 and t2 applied twice each, t3 never, the counter
    # stored as "+N" (the final read's int() took "+10" for 10)
    writes = []
    for t, c in (("t1", 2), ("t1", 4), ("t2", 7), ("t2", 10)):
        writes.append(dict(apply(t, 0), **{keys.COUNTER: f"+{c}"}))
    rec = record(*writes, completed_only("t3"))
    final = final_state(10, ALL_DONE, rec)
    final["counter"], final["counter_refused"] = None, "+10"
    got = {c.checker: c for c in checkers.check_run(run(CREATES, [], final))}
    once = got["exactly-once"]
    assert once.verdict is Verdict.INVALID
    assert "rev 5 wrote the counter as '+2': not a JSON integer" in once.summary
    assert "task t1 was completed (rev 5 wrote its task record completed) but no" in once.summary
    assert "(and 2 more)" in once.summary  # 4 unreadable writes and 3 tasks, 5 told
    assert got["double-apply"].verdict is Verdict.INVALID
    assert got["counter"].verdict is Verdict.INVALID
    assert "the final read found the counter as '+10'" in got["counter"].summary


def test_three_completed_tasks_with_no_apply_is_a_contradiction() -> None:
    bad = record(*(completed_only(t) for t in AMOUNTS), {keys.COUNTER: 10})
    got = exactly_once(bad)
    assert got.verdict is Verdict.INVALID
    for t in AMOUNTS:
        assert any(
            a.get("kind") == "completed-never-applied" and a["task_id"] == t for a in got.anomalies
        )
    assert "task t1 was completed (rev 5 wrote its task record completed) but no transaction" in (
        got.summary
    )
    assert "rev 8 changed the counter by +10 (0 → 10) in a transaction that wrote no task" in (
        got.summary
    )


def test_the_final_read_refusing_the_counter_is_invalid_not_unknown() -> None:
    final = final_state(10, ALL_DONE)
    final["counter"], final["counter_refused"] = None, "+10"
    got = checkers.counter_checker(run(CREATES, [], final))
    assert got.verdict is Verdict.INVALID
    assert "the final read found the counter as '+10': not a JSON integer" in got.summary
    assert checkers.counter_checker(run(CREATES, [], final_state(10, ALL_DONE))).verdict is (
        Verdict.VALID
    )


def test_a_counter_of_another_type_or_too_long_is_named() -> None:
    for value, says in (
        (10.0, "as 10.0: a float, not an integer"),
        (True, "as true: a boolean, not an integer"),
        ({"chaos_truncated_bytes": 5000}, "a 5000-byte value (longer than 4096 bytes"),
        ([10], "as [10]: a JSON list, not an integer"),
    ):
        bad = record(apply("t1", 2), apply("t2", 5), dict(apply("t3", 0), **{keys.COUNTER: value}))
        got = exactly_once(bad)
        assert got.verdict is Verdict.INVALID, value
        assert says in got.summary, got.summary
        assert "rev 7 wrote the counter" in got.summary


# ---------------------------------------------------------------- deletes and foreign keys


def test_a_counter_deleted_and_rewritten_is_invalid() -> None:
    # t1 applied, the counter deleted, t1 applied again from 0: the counter ends at 10, and a
    # replay that took the delete for a new baseline saw one apply of t1
    rec = record(apply("t1", 2), {}, apply("t1", 2), apply("t2", 5), apply("t3", 10))
    rec["txns"][5]["deletes"] = [keys.COUNTER]
    got = verdicts(rec)
    assert got["counter"].verdict is Verdict.VALID  # the sum alone cannot see it
    once = got["exactly-once"]
    assert once.verdict is Verdict.INVALID
    assert "rev 6 deleted the counter" in once.summary and "starts again from 0" in once.summary
    assert "task t1 was applied 2 times" in once.summary and "revisions 5, 7" in once.summary
    assert got["double-apply"].verdict is Verdict.INVALID
    assert "rev 6 deleted the counter" in got["double-apply"].summary


def test_deleting_a_dedup_record_hides_evidence_and_is_named() -> None:
    rec = record(apply("t1", 2), apply("t2", 5), apply("t3", 10))
    rec["txns"].append({"revision": 9, "puts": {}, "deletes": [keys.dedup("e-t1")]})
    got = exactly_once(rec)
    assert got.verdict is Verdict.INVALID
    assert f"rev 9 deleted {keys.dedup('e-t1')} (a dedup record)" in got.summary
    # a relay's claim expiring is the lab's own lease: not a finding
    ok = record(apply("t1", 2), apply("t2", 5), apply("t3", 10))
    ok["txns"].append({"revision": 9, "puts": {}, "deletes": [keys.outbox_claim("e-t1")]})
    assert exactly_once(ok).verdict is Verdict.VALID


def test_a_shadow_counter_under_the_prefix_then_copied_in_is_invalid() -> None:
    shadow = keys.PREFIX + "shadow-counter"
    writes = [dict(completed_only(t), **{shadow: c}) for t, c in (("t1", 2), ("t2", 5), ("t3", 10))]
    got = verdicts(record(*writes, {keys.COUNTER: 10}))
    once = got["exactly-once"]
    assert once.verdict is Verdict.INVALID
    assert f"rev 5 wrote {shadow}, which is no key of lab3's layout" in once.summary
    assert any(a.get("kind") == "unexplained-change" and a["revision"] == 8 for a in once.anomalies)
    assert got["double-apply"].verdict is Verdict.INVALID


def test_a_forged_end_marker_is_a_foreign_key() -> None:
    rec = record(apply("t1", 2), apply("t2", 5), apply("t3", 10))
    rec["txns"].append({"revision": 9, "puts": {keys.PREFIX + "~chaos-record-end": "x"},
                        "deletes": []})  # fmt: skip
    got = exactly_once(rec)
    assert got.verdict is Verdict.INVALID and "~chaos-record-end, which is no key" in got.summary


def test_a_task_record_of_another_type_is_named() -> None:
    rec = record(apply("t1", 2), apply("t2", 5), apply("t3", 10))
    rec["txns"].append({"revision": 9, "puts": {keys.task("t2"): "done"}, "deletes": []})
    got = exactly_once(rec)
    assert got.verdict is Verdict.INVALID
    assert "rev 9 wrote /lab3/tasks/t2 (a task) as 'done': not a task record" in got.summary


# ---------------------------------------------------------------- applies


def test_compensating_double_applies_are_invalid_naming_every_task() -> None:
    # t1 and t2 applied twice, t3 never: 2+2+3+3 = 10, so the counter matches
    rec = record(apply("t1", 2), apply("t1", 4), apply("t2", 7), apply("t2", 10),
                 completed_only("t3"))  # fmt: skip
    got = verdicts(rec)
    assert got["counter"].verdict is Verdict.VALID  # the sum alone cannot see it
    once = got["exactly-once"]
    assert once.verdict is Verdict.INVALID
    assert "task t1 was applied 2 times" in once.summary and "revisions 5, 6" in once.summary
    assert "task t2 was applied 2 times" in once.summary
    assert "task t3 was completed (rev 9 wrote its task record completed) but no" in once.summary
    assert got["double-apply"].verdict is Verdict.INVALID
    # double-apply, a matching counter and no lost task agree once exactly-once says why
    assert checkers.contradictions(list(got.values())) == []
    without = [r for r in got.values() if r.checker != "exactly-once"]
    assert checkers.contradictions(without) != []


def test_a_second_apply_in_a_transaction_of_its_own_is_invalid() -> None:
    rec = record(apply("t1", 2), {keys.COUNTER: 4}, apply("t2", 7), apply("t3", 12))
    got = exactly_once(rec, counter=12)
    assert got.verdict is Verdict.INVALID
    assert "rev 6 changed the counter by +2 (2 → 4) in a transaction that wrote no task's keys" in (
        got.summary
    )
    assert "the counter changed by +12 over the run (from 0 to 12) but the applies attributed" in (
        got.summary
    )


def test_a_change_whose_delta_matches_no_task_of_its_transaction_is_invalid() -> None:
    rec = record(apply("t1", 3), apply("t2", 6), apply("t3", 11))
    got = exactly_once(rec, counter=11)
    assert got.verdict is Verdict.INVALID
    assert "rev 5 changed the counter by +3 (0 → 3) in a transaction that wrote the keys of t1, " \
        "but t1's is +2" in got.summary  # fmt: skip


def test_the_final_read_disagreeing_with_the_record_is_invalid() -> None:
    got = exactly_once(ONCE_EACH, counter=12)
    assert got.verdict is Verdict.INVALID
    assert "the final read found the counter at 12 but etcd's record ends with 10" in got.summary


# ---------------------------------------------------------------- the record itself


@pytest.mark.parametrize(
    "change,says",
    [
        ({"truncated": True}, "was cut after 500000 events"),
        ({"error": "etcd's history was compacted after revision 1: ..."}, "compacted"),
        ({"from_revision": None}, "does not say which revision it starts from"),
    ],
)
def test_a_record_cut_compacted_or_unanchored_is_unknown(change: dict[str, Any], says: str) -> None:
    rec = {**copy.deepcopy(ONCE_EACH), **change}
    got = verdicts(rec)
    for name in ("exactly-once", "double-apply", "idempotent-create"):
        assert got[name].verdict is Verdict.UNKNOWN, name
        assert says in got[name].summary
    assert exactly_once(ONCE_EACH).verdict is Verdict.VALID


def test_a_missing_record_is_unknown() -> None:
    final = final_state(10, ALL_DONE)
    del final["record"]
    got = checkers.exactly_once(run(CREATES, [], final))
    assert got.verdict is Verdict.UNKNOWN and "has no etcd record" in got.summary
