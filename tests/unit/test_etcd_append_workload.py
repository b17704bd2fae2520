"""etcd-append without Docker: its options, and its check of a stored run (a pure function of
the history: the same Elle checker, the model from the run's own options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.core.spec import TestSpec
from chaos.histories.ops import Op, OpType
from chaos.histories.store import StoredRun
from chaos.workloads.etcd_append import EtcdAppend, _apply


def test_options_are_checked_before_anything_starts() -> None:
    wl = EtcdAppend()
    wl.preflight(TestSpec(workload="etcd-append"))
    wl.preflight(TestSpec(workload="etcd-append", options={"client": "unsafe"}))
    with pytest.raises(ValueError, match="etcd-append option client=yolo: expected safe or unsafe"):
        wl.preflight(TestSpec(workload="etcd-append", options={"client": "yolo"}))
    with pytest.raises(
        ValueError, match="etcd-append has no option keys; options: client, consistency"
    ):
        wl.preflight(TestSpec(workload="etcd-append", options={"keys": "3"}))
    with pytest.raises(
        ValueError, match="option consistency=linearizable: expected one of read-unc"
    ):
        wl.preflight(TestSpec(workload="etcd-append", options={"consistency": "linearizable"}))


def test_micro_ops_apply_in_order_and_reads_see_the_transactions_own_appends() -> None:
    lists = {1: [7]}
    done, written = _apply(
        [["r", 1, None], ["append", 1, 8], ["r", 1, None], ["r", 2, None]], lists
    )
    assert done == [["r", 1, [7]], ["append", 1, 8], ["r", 1, [7, 8]], ["r", 2, []]]
    assert written == {1} and lists == {1: [7, 8]}


def _run(spec_options: dict[str, str]) -> StoredRun:
    def op(i: int, p: int, t: OpType, v: list[list[object]]) -> Op:
        return Op(index=i, time=i / 10, process=p, type=t, f="txn", value=v)

    history = [
        op(0, 0, OpType.INVOKE, [["r", 2, None], ["append", 1, 1]]),
        op(1, 1, OpType.INVOKE, [["r", 1, None], ["append", 2, 2]]),
        op(2, 0, OpType.OK, [["r", 2, []], ["append", 1, 1]]),
        op(3, 1, OpType.OK, [["r", 1, []], ["append", 2, 2]]),
        op(4, 2, OpType.INVOKE, [["r", 1, None], ["r", 2, None]]),
        op(5, 2, OpType.OK, [["r", 1, [1]], ["r", 2, [2]]]),
        Op(index=6, time=0.6, process="nemesis", type=OpType.INFO, f="pause", value=None),
    ]
    return StoredRun(
        path=Path("/nonexistent"),
        spec={"workload": "etcd-append", "options": spec_options},
        history=history,
        events=[],
        final={},
        schedule=[],
        problems=[],
    )


def test_check_holds_the_history_to_the_runs_consistency_option() -> None:
    (r,) = EtcdAppend().check(_run({}))
    assert r.checker == "elle-list-append" and r.verdict.value == "invalid"
    assert "not strict-serializable: G2-item (1)" in r.summary
    assert r.stats["skipped_ops"] == {"nemesis": 1}
    (r,) = EtcdAppend().check(_run({"consistency": "snapshot-isolation"}))
    assert r.verdict.value == "valid" and "allowed by snapshot-isolation: G2-item" in r.summary
