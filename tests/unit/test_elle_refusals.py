"""What Elle refuses or flags without a cycle: duplicate appends and writes, future reads, dirty
updates, every reader of an aborted element, a read with an element twice (no bogus G0), and a
process with several invocations open — each with the history that must pass beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.checkers.elle import MODELS, RawOp, TxnInputError, transactions
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from tests.unit.elle_history import check, concurrent, found, serial, steps, then


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_duplicate_append_is_invalid_under_every_model(name: str) -> None:
    h = concurrent(
        ("ok", 0, [("append", "x", 1)]),
        ("ok", 1, [("append", "x", 1)]),
        ("ok", 2, [("r", "x", [1])]),
    )
    r = check(h, name)
    assert r.verdict is Verdict.INVALID, r.summary
    (d,) = found(r, "duplicate-appends")
    assert d["txns"] == [3, 4] and d["forbidden"]
    assert d["explanation"] == (
        "1 was appended to key x more than once (ops 3, 4): no read can say which append it saw"
    )
    unique = concurrent(
        ("ok", 0, [("append", "x", 1)]),
        ("ok", 1, [("append", "x", 2)]),
        ("ok", 2, [("r", "x", [1, 2])]),
    )
    assert check(unique, name).verdict is Verdict.VALID


def test_a_duplicate_append_that_hid_a_g1c_makes_the_history_invalid() -> None:
    """The G1c of T1 and T2 runs through the element 1 of key y — which a failed transaction
    also appended: the edge is unknowable, the history is not valid."""
    h = concurrent(
        ("ok", 0, [("append", "x", 1), ("r", "y", [1])]),
        ("ok", 1, [("append", "x", 2), ("append", "y", 1)]),
        ("fail", 2, [("append", "y", 1)]),
        ("ok", 3, [("r", "x", [1, 2])]),
    )
    r = check(h, "read-committed")
    assert r.verdict is Verdict.INVALID
    assert {a["type"] for a in r.anomalies if a["forbidden"]} == {"duplicate-appends"}


def test_a_duplicate_write_is_invalid() -> None:
    h = concurrent(("ok", 0, [("w", "x", 1)]), ("ok", 1, [("w", "x", 1)]),
                   ("ok", 2, [("r", "x", 1)]))  # fmt: skip
    r = check(h, "read-uncommitted", model="rw-register")
    assert r.verdict is Verdict.INVALID
    assert found(r, "duplicate-writes")[0]["txns"] == [3, 4]
    ok = concurrent(("ok", 0, [("w", "x", 1)]), ("ok", 1, [("w", "x", 2)]),
                    ("ok", 2, [("r", "x", 1)]))  # fmt: skip
    assert check(ok, "read-uncommitted", model="rw-register").verdict is Verdict.VALID


def test_a_future_read_is_invalid_under_read_committed() -> None:
    h = serial(("ok", 0, [("r", "x", [1]), ("append", "x", 1)]))
    r = check(h, "read-committed")
    assert r.verdict is Verdict.INVALID, r.summary
    (f,) = found(r, "future-read")
    assert f["explanation"] == "op 1 read 1 in key x, which it appended only later (future read)"
    # a future read is a G1c of one transaction: read-uncommitted allows it
    r = check(h, "read-uncommitted")
    assert r.verdict is not Verdict.INVALID and not found(r, "future-read")[0]["forbidden"]
    # reading one's own earlier append is fine
    assert check(serial(("ok", 0, [("append", "x", 1), ("r", "x", [1])]),
                        ("ok", 1, [("r", "x", [1])])), "read-committed").verdict is Verdict.VALID  # fmt: skip
    rw = serial(("ok", 0, [("r", "x", 1), ("w", "x", 1)]))
    r = check(rw, "read-committed", model="rw-register")
    assert r.verdict is Verdict.INVALID and found(r, "future-read")


def test_a_dirty_update_and_a_failed_append_nobody_built_on() -> None:
    h = then(
        serial(("fail", 0, [("append", "x", 1)])),
        serial(("ok", 1, [("append", "x", 2)])),
        serial(("ok", 2, [("r", "x", [1, 2])])),
    )
    r = check(h, "read-committed")
    (d,) = found(r, "dirty-update")
    assert d["values"] == [1, 2] and d["txns"] == [1, 3] and d["forbidden"]
    assert found(r, "G1a")
    last = then(serial(("ok", 1, [("append", "x", 2)])), serial(("fail", 0, [("append", "x", 1)])),
                serial(("ok", 2, [("r", "x", [2, 1])])))  # fmt: skip
    r = check(last, "read-committed")
    assert found(r, "G1a") and not found(r, "dirty-update")


def test_every_reader_of_an_aborted_element_is_named() -> None:
    h = then(
        serial(("fail", 0, [("append", "x", 1)])),
        concurrent(("ok", 1, [("r", "x", [1])]), ("ok", 2, [("r", "x", [1])]),
                   ("ok", 3, [("r", "x", [])])),
    )  # fmt: skip
    r = check(h, "read-committed")
    g1a = found(r, "G1a")
    assert sorted(a["txns"][1] for a in g1a) == [5, 6] and g1a[0]["count"] == 2


def test_a_read_with_an_element_twice_gives_no_bogus_g0() -> None:
    """Elle's "duplicated elements" case: x = [1 2 1] orders 1 before 2 (its first place), so
    the cycle is the G1c — and its every step checks out against the history."""
    h = concurrent(
        ("ok", 0, [("append", "x", 1), ("r", "y", [1])]),
        ("ok", 1, [("append", "x", 2), ("append", "y", 1)]),
        ("ok", 2, [("r", "x", [1, 2, 1])]),
    )
    r = check(h, "read-uncommitted")
    assert not found(r, "G0")
    assert r.verdict is Verdict.INVALID and found(r, "duplicate-elements")
    (g1c,) = found(check(h, "read-committed"), "G1c")
    said = " ".join(steps(g1c))
    assert sorted(s["type"] for s in g1c["steps"]) == ["wr", "ww"]
    assert "appended 2 to key x right after" in said and "append of 1 to key y (read [1])" in said


def _ops(events: list[tuple[str, int, list[list[object]]]]) -> list[RawOp]:
    return [
        RawOp(pos=i, index=i, process=p, type=t, f="txn", value=v)
        for i, (t, p, v) in enumerate(events)
    ]


def test_several_open_invocations_on_one_process() -> None:
    # nested, told apart by their micro-ops: paired each with its own
    nested = _ops([("invoke", 0, [["r", "x", None]]), ("invoke", 0, [["append", "x", 1]]),
                   ("ok", 0, [["append", "x", 1]]), ("ok", 0, [["r", "x", [1]]])])  # fmt: skip
    txns, _ = transactions(nested)
    assert [(t.invoke_index, t.index) for t in txns] == [(1, 2), (0, 3)]
    # five open, completed in order, each its own shape: handled
    five = [("invoke", 0, [["append", "x", i]]) for i in range(5)]
    five += [("ok", 0, [["append", "x", i]]) for i in range(5)]
    txns, _ = transactions(_ops(five))
    assert [(t.invoke_index, t.index) for t in txns] == [(i, i + 5) for i in range(5)]
    # five open that all look alike: which one completed cannot be told — refused, and said so
    same = [("invoke", 0, [["r", "x", None]]) for _ in range(5)]
    same += [("ok", 0, [["r", "x", []]]) for _ in range(5)]
    with pytest.raises(TxnInputError) as e:
        transactions(_ops(same))
    assert str(e.value) == (
        "op 5: process 0 has 5 invocations open (ops 0, 1, 2, 3, 4) and the completion's "
        "micro-ops match 5 of them: a process runs one transaction at a time, so which one "
        "completed cannot be told"
    )
    other = _ops([("invoke", 0, [["r", "x", None]]), ("invoke", 0, [["r", "y", None]]),
                  ("ok", 0, [["r", "z", []]])])  # fmt: skip
    with pytest.raises(TxnInputError, match="match none of them"):
        transactions(other)


def test_cli_refuses_a_process_with_open_invocations_it_cannot_tell_apart(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(
        "".join("{:type :invoke, :process 3, :value [[:r :x nil]]}\n" for _ in range(5))
        + "".join("{:type :ok, :process 3, :value [[:r :x []]]}\n" for _ in range(5))
    )
    r = CliRunner().invoke(check_file_command, [str(f), "--model", "list-append"])
    assert r.exit_code == 3, r.output
    assert "op 5 (line 6): process 3 has 5 invocations open (ops 0, 1, 2, 3, 4)" in r.output
    assert "Traceback" not in r.output
    f.write_text(
        "".join(f"{{:type :invoke, :process 3, :value [[:append :x {i}]]}}\n" for i in range(5))
        + "".join(f"{{:type :ok, :process 3, :value [[:append :x {i}]]}}\n" for i in range(5))
    )
    r = CliRunner().invoke(check_file_command, [str(f), "--model", "list-append"])
    assert r.exit_code == 0, r.output
