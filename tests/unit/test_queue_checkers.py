"""The counting checkers (total-queue, set-full, counter, unique-ids, stats, exceptions), the
offline ``check_history`` / ``check_file`` mapping and the ``chaos check FILE --model`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaos.checkers.counter import counter
from chaos.checkers.exceptions import crash_like, exceptions
from chaos.checkers.offline import (
    MODEL_NAMES,
    check_file,
    check_history,
    load_any_history,
    load_rows,
    write_history_edn,
)
from chaos.checkers.queue import total_queue
from chaos.checkers.sets import set_full
from chaos.checkers.stats import stats
from chaos.checkers.unique_ids import unique_ids
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from chaos.histories import edn
from chaos.histories.ops import Op, OpType
from tests.corpus import PORCUPINE


def h(*events: tuple[Any, ...]) -> list[Op]:
    ops = []
    for i, e in enumerate(events):
        p, t, f, v = e[:4]
        error = e[4] if len(e) > 4 else None
        ops.append(Op(index=i, time=i * 0.01, process=p, type=OpType(t), f=f, value=v, error=error))
    return ops


def pair(
    p: Any, f: str, v_in: Any, t: str = "ok", v_out: Any = "same", error: str | None = None
) -> list[tuple[Any, ...]]:
    return [(p, "invoke", f, v_in), (p, t, f, v_in if v_out == "same" else v_out, error)]


def kinds(result: Any) -> set[str]:
    return {a["type"] for a in result.anomalies}


# ---------------------------------------------------------------- total-queue


def _queue_ok() -> list[Op]:
    return h(
        *pair(0, "enqueue", 1),
        *pair(1, "enqueue", 2),
        *pair(2, "enqueue", 3, "info"),  # indeterminate, and it did happen: recovered
        *pair(3, "enqueue", 4, "info"),  # indeterminate, never came out: fine
        *pair(0, "dequeue", None, v_out=1),
        *pair(0, "dequeue", None, "fail", None),
        *pair(1, "drain", None, v_out=[2, 3]),
        ("nemesis", "invoke", "pause", None),
        ("nemesis", "info", "pause", {"node": "n1"}),
    )


def test_total_queue_valid_with_recovered() -> None:
    r = total_queue(_queue_ok())
    assert r.verdict is Verdict.VALID
    assert r.stats["recovered_count"] == 1 and r.stats["lost_count"] == 0
    assert r.stats["attempt_count"] == 4 and r.stats["acknowledged_count"] == 2
    assert kinds(r) == {"recovered"}


def test_total_queue_lost() -> None:
    r = total_queue(
        h(*pair(0, "enqueue", 1), *pair(0, "enqueue", 2), *pair(1, "dequeue", None, v_out=2))
    )
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0] == {"type": "lost", "value": 1, "count": 1}
    assert "never dequeued" in r.summary


def test_total_queue_unexpected() -> None:
    r = total_queue(
        h(
            *pair(0, "enqueue", 1),
            *pair(1, "dequeue", None, v_out=1),
            *pair(1, "dequeue", None, v_out=99),
        )
    )
    assert r.verdict is Verdict.INVALID
    assert kinds(r) == {"unexpected"} and r.stats["unexpected_count"] == 1


def test_total_queue_duplicates_reported_and_optionally_fatal() -> None:
    hist = h(
        *pair(0, "enqueue", 1),
        *pair(1, "dequeue", None, v_out=1),
        *pair(1, "dequeue", None, v_out=1),
    )
    r = total_queue(hist)
    assert r.verdict is Verdict.VALID and r.stats["duplicated_count"] == 1
    assert kinds(r) == {"duplicated"}
    strict = total_queue(hist, allow_duplicates=False)
    assert strict.verdict is Verdict.INVALID and "duplicate" in strict.summary


def test_total_queue_multiset_path_and_unhashable_values() -> None:
    # Values enqueued twice take the Counter path; list values are frozen.
    hist = h(
        *pair(0, "enqueue", [1, "a"]),
        *pair(0, "enqueue", [1, "a"]),
        *pair(1, "dequeue", None, v_out=[1, "a"]),
    )
    r = total_queue(hist)
    assert r.verdict is Verdict.INVALID and r.stats["lost_count"] == 1


def test_total_queue_nothing_attempted_is_unknown() -> None:
    assert total_queue(h(*pair(0, "dequeue", None, "fail", None))).verdict is Verdict.UNKNOWN


# ------------------------------------------------------------------- set-full


def test_set_full_stable() -> None:
    hist = h(
        *pair(0, "add", 1),
        *pair(1, "add", 2, "info"),
        *pair(2, "read", None, v_out=[1]),
        *pair(2, "read", None, v_out=[1, 2]),
    )
    r = set_full(hist)
    assert r.verdict is Verdict.VALID
    assert r.stats["stable_count"] == 2 and r.stats["lost_count"] == 0


def test_set_full_lost() -> None:
    hist = h(
        *pair(0, "add", 1), *pair(2, "read", None, v_out=[1]), *pair(2, "read", None, v_out=[])
    )
    r = set_full(hist)
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["type"] == "lost" and r.anomalies[0]["element"] == 1


def test_set_full_never_read_indeterminate_add_is_fine() -> None:
    hist = h(*pair(0, "add", 1), *pair(1, "add", 2, "info"), *pair(2, "read", None, v_out=[1]))
    r = set_full(hist)
    assert r.verdict is Verdict.VALID and r.stats["never_read_count"] == 1


def test_set_full_concurrent_read_missing_element_is_not_lost() -> None:
    # The read overlaps the add: it may have happened before it.
    hist = h(
        (0, "invoke", "add", 1),
        (2, "invoke", "read", None),
        (0, "ok", "add", 1),
        (2, "ok", "read", []),
        *pair(2, "read", None, v_out=[1]),
    )
    assert set_full(hist).verdict is Verdict.VALID


def test_set_full_stale_only_matters_when_linearizable() -> None:
    hist = h(
        *pair(0, "add", 1), *pair(2, "read", None, v_out=[]), *pair(2, "read", None, v_out=[1])
    )
    assert set_full(hist).verdict is Verdict.VALID
    r = set_full(hist, linearizable=True)
    assert r.verdict is Verdict.INVALID and "stale" in kinds(r)


def test_set_full_unexpected_and_duplicates() -> None:
    r = set_full(h(*pair(0, "add", 1), *pair(2, "read", None, v_out=[1, 7])))
    assert r.verdict is Verdict.INVALID and "unexpected" in kinds(r)
    r = set_full(h(*pair(0, "add", 1), *pair(2, "read", None, v_out=[1, 1])))
    assert r.verdict is Verdict.INVALID and "duplicated" in kinds(r)


def test_set_full_no_stable_element_is_unknown() -> None:
    assert set_full(h(*pair(0, "add", 1))).verdict is Verdict.UNKNOWN


# -------------------------------------------------------------------- counter


def test_counter_within_bounds() -> None:
    hist = h(
        *pair(0, "add", 2),
        (0, "invoke", "add", 3),
        (1, "invoke", "read", None),
        (1, "ok", "read", 5),
        (0, "info", "add", 3),
        *pair(0, "add", 10, "fail"),
        *pair(1, "read", None, v_out=2),
    )
    r = counter(hist)
    assert r.verdict is Verdict.VALID and r.stats["read_count"] == 2


def test_counter_read_out_of_bounds() -> None:
    r = counter(h(*pair(0, "add", 2), *pair(1, "read", None, v_out=1)))
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0] == {
        "type": "out-of-bounds",
        "lower": 2,
        "value": 1,
        "upper": 2,
        "position": 3,
    }
    # A failed add does not raise the upper bound.
    r = counter(h(*pair(0, "add", 2, "fail"), *pair(1, "read", None, v_out=2)))
    assert r.verdict is Verdict.INVALID


def test_counter_negative_adds_and_increment() -> None:
    hist = h(
        *pair(0, "add", 5),
        *pair(0, "add", -2),
        *pair(0, "increment", None),
        *pair(1, "read", None, v_out=4),
    )
    assert counter(hist).verdict is Verdict.VALID
    bad = h(*pair(0, "add", 5), *pair(0, "add", -2), *pair(1, "read", None, v_out=5))
    assert counter(bad).verdict is Verdict.INVALID


# ----------------------------------------------------------------- unique-ids


def test_unique_ids() -> None:
    ok = h(
        *pair(0, "generate", None, v_out=1),
        *pair(1, "generate", None, v_out=2),
        *pair(1, "generate", None, "info", None),
    )
    r = unique_ids(ok)
    assert r.verdict is Verdict.VALID
    assert r.stats == {
        "attempted_count": 3,
        "acknowledged_count": 2,
        "duplicated_count": 0,
        "range": [1, 2],
    }
    bad = h(*pair(0, "generate", None, v_out=1), *pair(1, "generate", None, v_out=1))
    r = unique_ids(bad)
    assert r.verdict is Verdict.INVALID and r.anomalies[0] == {
        "type": "duplicated",
        "id": 1,
        "count": 2,
    }


# ---------------------------------------------------------- stats, exceptions


def test_stats_counts_per_f() -> None:
    r = stats(_queue_ok())
    assert r.verdict is Verdict.VALID
    assert r.stats["by_f"]["enqueue"] == {"count": 4, "ok": 2, "fail": 0, "info": 2}
    assert r.stats["nemesis"]["pause"]["info"] == 1
    assert "enqueue" in r.summary


def test_stats_f_that_never_succeeded_is_unknown() -> None:
    r = stats(h(*pair(0, "write", 1), *pair(0, "cas", [1, 2], "fail"), (1, "invoke", "read", None)))
    assert r.verdict is Verdict.UNKNOWN
    assert {a["f"] for a in r.anomalies} == {"cas", "read"}
    assert r.stats["by_f"]["read"]["info"] == 1  # never completed counts as info


def test_exceptions() -> None:
    ok = h(*pair(0, "write", 1, "info", error="timeout"))
    assert exceptions(ok).verdict is Verdict.VALID
    tb = "Traceback (most recent call last):\n  File ...\nKeyError: 'x'"
    hist = h(
        *pair(0, "write", 1, "info", error=tb),
        *pair(1, "write", 1, "info", error="KeyError: 'y'"),
        *pair(2, "read", None, "fail", error="connection refused"),
    )
    r = exceptions(hist)
    assert r.verdict is Verdict.UNKNOWN
    assert r.anomalies[0]["exception"] == "KeyError" and r.anomalies[0]["count"] == 2
    assert crash_like("java.lang.NullPointerException")
    assert crash_like("panic: runtime error: index out of range")
    assert not crash_like("ConnectionRefusedError: [Errno 111] Connection refused")
    assert not crash_like("timed out")
    assert not crash_like("reign of terror")  # a word ending in "error" is not a class name


# ------------------------------------------------------- offline + command


def _write_jsonl(path: Path, ops: list[Op], header: bool = True) -> None:
    lines = [json.dumps({"format": "chaos.history", "version": 1})] if header else []
    lines += [json.dumps(op.to_json()) for op in ops]
    path.write_text("\n".join(lines) + "\n")


def test_every_model_name_maps_to_checkers() -> None:
    for model in MODEL_NAMES:
        names = [r.checker for r in check_history(_queue_ok(), model)]
        assert names[-2:] == ["stats", "exceptions"], model
    with pytest.raises(ValueError):
        check_history(_queue_ok(), "nonsense")


def test_check_file_fast_rows_agree_with_ops(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    _write_jsonl(path, _queue_ok())
    rows, problems = load_rows(path)
    assert problems == [] and rows.count == len(_queue_ok())
    fast, _ = check_file(path, "total-queue")
    slow = check_history(_queue_ok(), "total-queue")
    assert [r.to_json() for r in fast] == [r.to_json() for r in slow]


def test_load_any_history_detects_formats(tmp_path: Path) -> None:
    ops = _queue_ok()
    (tmp_path / "a.jsonl").write_text("")
    _write_jsonl(tmp_path / "a.jsonl", ops)
    edn.write_history(tmp_path / "a.txt", ops)  # EDN under a neutral name: sniffed
    (tmp_path / "b.txt").write_text("0\t:invoke\t:enqueue\t1\n0\t:ok\t:enqueue\t1\n")
    assert load_any_history(tmp_path / "a.jsonl")[0] == ops
    assert load_any_history(tmp_path / "a.txt")[0] == ops
    log_ops, problems = load_any_history(tmp_path / "b.txt")
    assert problems == [] and [o.f for o in log_ops] == ["enqueue", "enqueue"]


def test_write_history_edn_round_trips_a_run(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "history.jsonl", _queue_ok())
    out = write_history_edn(tmp_path)
    assert out == tmp_path / "history.edn"
    assert edn.read_history(out) == (_queue_ok(), [])
    assert load_any_history(tmp_path)[0] == _queue_ok()  # a run folder reads its history


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(check_file_command, args)


def test_command_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    _write_jsonl(good, _queue_ok())
    r = _run([str(good), "--model", "total-queue"])
    assert r.exit_code == 0, r.output
    assert "verdict: valid" in r.output
    lost = tmp_path / "lost.jsonl"
    _write_jsonl(lost, h(*pair(0, "enqueue", 1)))
    r = _run([str(lost), "--model", "total-queue", "--json"])
    assert r.exit_code == 1
    assert json.loads(r.output)["verdict"] == "invalid"
    assert _run([str(tmp_path / "missing.jsonl"), "--model", "kv"]).exit_code == 3
    empty = tmp_path / "junk.jsonl"
    empty.write_text("not json\n{also not\n")
    r = _run([str(empty), "--model", "total-queue"])
    assert r.exit_code == 3 and "Traceback" not in r.output


@pytest.mark.corpus
def test_command_exit_codes_on_porcupine_histories() -> None:
    r = _run([str(PORCUPINE / "jepsen" / "etcd_002.log"), "--model", "cas-register"])
    assert r.exit_code == 0, r.output
    r = _run([str(PORCUPINE / "kv" / "c10-bad.txt"), "--model", "kv"])
    assert r.exit_code == 1
    r = _run(
        [
            str(PORCUPINE / "kv" / "c50-ok.txt"),
            "--model",
            "kv",
            "--max-states",
            "10",
        ]
    )
    assert r.exit_code == 2


def test_command_reports_broken_lines_and_checks_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    _write_jsonl(path, _queue_ok())
    text = path.read_text().splitlines()
    text.insert(3, "{broken")
    path.write_text("\n".join(text) + "\n" + '{"index": 99, "ti')  # and a truncated tail
    r = _run([str(path), "--model", "total-queue"])
    assert "history.jsonl:4: bad line" in r.output
    assert "truncated last line" in r.output
    assert "Traceback" not in r.output
    # A lost middle line: a malformed history, refused (exit 3) unless --lenient, and then
    # "valid" is unprovable: unknown, not valid.
    assert r.exit_code == 3 and "--lenient" in r.output
    r = _run([str(path), "--model", "total-queue", "--lenient"])
    assert r.exit_code == 2
    # Only a truncated tail (the writer died mid-line): the rest decides.
    path.write_text("\n".join(t for t in text if t != "{broken") + "\n" + '{"index": 99')
    r = _run([str(path), "--model", "total-queue"])
    assert r.exit_code == 0, r.output
