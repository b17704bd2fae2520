"""etcd-append and etcd-rw-register without Docker: their options, their transactions (values
unique per key, keys retired), how each model's micro-ops meet etcd's values, the safe client's
guard (a conflict writes nothing; rw-register fails at once, never a silent second run), and
their checks of a stored run (a pure function of the history: the same Elle checker, the model
from the run's own options)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from chaos.core.spec import TestSpec
from chaos.histories.ops import Op, OpType
from chaos.histories.store import StoredRun
from chaos.workloads import etcd_append, etcd_rw_register, etcd_txn, registry
from chaos.workloads.etcd_append import EtcdAppend
from chaos.workloads.etcd_rw_register import EtcdRwRegister

APPEND, RW = etcd_append.MODEL, etcd_rw_register.MODEL


@pytest.mark.parametrize("name", ["etcd-append", "etcd-rw-register"])
def test_options_are_checked_before_anything_starts(name: str) -> None:
    wl = registry.get(name)
    wl.preflight(TestSpec(workload=name))
    wl.preflight(TestSpec(workload=name, options={"client": "unsafe"}))
    wl.preflight(TestSpec(workload=name, options={"consistency": "PL-SI"}))
    with pytest.raises(ValueError, match=f"{name} option client=yolo: expected safe or unsafe"):
        wl.preflight(TestSpec(workload=name, options={"client": "yolo"}))
    with pytest.raises(
        ValueError, match=f"{name} has no option keys; options: client, consistency"
    ):
        wl.preflight(TestSpec(workload=name, options={"keys": "3"}))
    with pytest.raises(
        ValueError, match=r"option consistency=nonsense: expected one of .*read-committed"
    ):
        wl.preflight(TestSpec(workload=name, options={"consistency": "nonsense"}))
    with pytest.raises(ValueError, match="--concurrency must be at least 1"):
        wl.preflight(TestSpec(workload=name, concurrency=0))


def test_transactions_write_values_unique_per_key_and_retire_keys() -> None:
    gen = etcd_txn.Generator(random.Random(7), "w")
    txns = [gen() for _ in range(400)]
    assert all(1 <= len(t) <= 4 for t in txns)
    mops = [m for t in txns for m in t]
    assert {f for f, _, _ in mops} == {"r", "w"}
    assert all(v is None for f, _, v in mops if f == "r")
    writes = [(k, v) for f, k, v in mops if f == "w"]
    # every write a fresh value: a read's value names its one writer
    assert len({v for _, v in writes}) == len(writes)
    per_key: dict[int, int] = {}
    for k, _ in writes:
        per_key[k] = per_key.get(k, 0) + 1
    assert max(per_key.values()) == etcd_txn.MAX_WRITES
    assert len(per_key) > etcd_txn.ACTIVE_KEYS  # retired keys were replaced by fresh ones
    # the same seed makes the same transactions
    again = etcd_txn.Generator(random.Random(7), "w")
    assert [again() for _ in range(400)] == txns
    # reads and writes drawn apart: few writes come right after a read of their key
    assert sum(map(_read_modify_writes, txns)) / len(writes) < 0.15


def _read_modify_writes(mops: list[list[Any]]) -> int:
    """Writes whose key the transaction read just before, having not touched it earlier."""
    return sum(
        1
        for i, (f, k, _) in enumerate(mops)
        if f == "w" and i and mops[i - 1][:2] == ["r", k] and k not in {m[1] for m in mops[: i - 1]}
    )


def test_rw_register_transactions_read_half_their_fresh_keys_before_writing_them() -> None:
    gen = etcd_txn.Generator(random.Random(7), "w", RW.read_first)
    txns = [gen() for _ in range(2000)]
    assert all(1 <= len(t) <= 8 for t in txns) and max(map(len, txns)) > 4
    writes = [v for t in txns for f, _, v in t if f == "w"]
    assert len(set(writes)) == len(writes)
    rmw = sum(map(_read_modify_writes, txns))
    # half the writes of a key not yet touched get a read before them
    assert 0.35 < rmw / len(writes) < 0.65, rmw / len(writes)


def test_micro_ops_apply_in_order_and_reads_see_the_transactions_own_writes() -> None:
    lists: dict[int, Any] = {1: [7]}
    done, written = APPEND.apply(
        [["r", 1, None], ["append", 1, 8], ["r", 1, None], ["r", 2, None]], lists
    )
    assert done == [["r", 1, [7]], ["append", 1, 8], ["r", 1, [7, 8]], ["r", 2, []]]
    assert written == {1} and lists == {1: [7, 8]}
    registers: dict[int, Any] = {1: 7}
    done, written = RW.apply(
        [["r", 1, None], ["w", 1, 8], ["r", 1, None], ["r", 2, None]], registers
    )
    assert done == [["r", 1, 7], ["w", 1, 8], ["r", 1, 8], ["r", 2, None]]
    assert written == {1} and registers == {1: 8}
    # what a transaction takes from etcd: an append needs every list it touches, a register
    # only what is read before it is written
    mops = [["w", 1, 3], ["r", 1, None], ["r", 2, None], ["w", 2, 4]]
    assert APPEND.must_read(mops) == {1, 2} and RW.must_read(mops) == {2}
    assert RW.decode(RW.encode(42).encode()) == 42
    assert APPEND.decode(APPEND.encode([1, 2]).encode()) == [1, 2]


class _Etcd:
    """Just enough of an etcd3 client for the safe client's two transactions: a store of
    (value, mod revision) with compares on mod revisions. "Another client" writes the ``meddle``
    keys and values after each of the next ``meddle_times`` read-only transactions."""

    def __init__(self) -> None:
        self.kv: dict[str, tuple[bytes, int]] = {}
        self.rev = 1
        self.meddle: dict[str, str] = {}
        self.meddle_times = 0
        self.txns = 0
        self.transactions = self

    # the request builders
    def get(self, key: str) -> tuple[str, str]:
        return ("get", key)

    def put(self, key: str, value: str) -> tuple[str, str, str]:
        return ("put", key, value)

    def mod(self, key: str) -> _Mod:
        return _Mod(key)

    def write(self, key: str, value: str) -> None:
        self.rev += 1
        self.kv[key] = (value.encode(), self.rev)

    def transaction(self, compare: list[Any], success: list[Any], failure: list[Any]) -> Any:
        self.txns += 1
        if not all(self.kv.get(k, (b"", 0))[1] == want for k, want in compare):
            return False, []
        out: list[Any] = []
        for req in success:
            if req[0] == "get":
                v = self.kv.get(req[1])
                out.append([(v[0], _Meta(v[1]))] if v else [])
            else:
                self.write(req[1], req[2])
        if self.meddle_times > 0 and all(r[0] == "get" for r in success):
            self.meddle_times -= 1
            for key, value in self.meddle.items():
                self.write(key, value)
        return True, out


class _Mod:
    def __init__(self, key: str) -> None:
        self.key = key

    def __eq__(self, want: object) -> Any:
        return (self.key, want)

    __hash__ = None  # type: ignore[assignment]


class _Meta:
    def __init__(self, rev: int) -> None:
        self.mod_revision = rev


def test_the_rw_register_safe_client_guards_what_it_read_and_a_conflict_fails_it() -> None:
    c = _Etcd()
    c.write("/rw-register/1", "5")
    wrote = [False]
    done = etcd_txn._safe(c, RW, [["r", 1, None], ["w", 1, 6], ["w", 2, 7]], wrote)
    assert done == [["r", 1, 5], ["w", 1, 6], ["w", 2, 7]]
    assert wrote == [True] and c.kv["/rw-register/1"][0] == b"6" and c.txns == 2
    # another client writes key 1 between the read and the commit: nothing is written, and
    # the transaction is not run a second time behind the history's back
    c.meddle, c.meddle_times = {"/rw-register/1": "55"}, 1
    wrote = [False]
    with pytest.raises(etcd_txn._Aborted, match=r"changed a key it read \(1 attempt"):
        etcd_txn._safe(c, RW, [["r", 1, None], ["w", 2, 8]], wrote)
    assert wrote == [False] and c.kv["/rw-register/2"][0] == b"7" and c.txns == 4
    # a key only written is not read, so a blind write needs no read and no guard
    assert etcd_txn._safe(c, RW, [["w", 3, 9]], [False]) == [["w", 3, 9]] and c.txns == 5


def test_the_append_safe_client_reads_again_after_a_conflict_and_gives_up_in_the_end() -> None:
    c = _Etcd()
    c.write("/append/1", "[1]")
    c.meddle, c.meddle_times = {"/append/1": "[1, 99]"}, 2
    # two conflicts, then a commit: what is recorded is what the committed attempt read
    done = etcd_txn._safe(c, APPEND, [["r", 1, None], ["append", 1, 2]], [False])
    assert done == [["r", 1, [1, 99]], ["append", 1, 2]] and c.txns == 6
    assert c.kv["/append/1"][0] == b"[1, 99, 2]"
    c.meddle_times = 10**6
    wrote = [False]
    with pytest.raises(etcd_txn._Aborted, match=rf"\({etcd_append.ATTEMPTS} attempt"):
        etcd_txn._safe(c, APPEND, [["append", 1, 3]], wrote)
    assert wrote == [False] and c.txns == 6 + 2 * etcd_append.ATTEMPTS
    assert b"3" not in c.kv["/append/1"][0]


def _run(workload: str, spec_options: dict[str, str], history: list[Op]) -> StoredRun:
    return StoredRun(
        path=Path("/nonexistent"),
        spec={"workload": workload, "options": spec_options},
        history=history,
        events=[],
        final={},
        schedule=[],
        problems=[],
    )


def _op(i: int, p: int, t: OpType, v: list[list[object]]) -> Op:
    return Op(index=i, time=i / 10, process=p, type=t, f="txn", value=v)


_NEMESIS = Op(index=6, time=0.6, process="nemesis", type=OpType.INFO, f="pause", value=None)


def test_append_check_holds_the_history_to_the_runs_consistency_option() -> None:
    history = [
        _op(0, 0, OpType.INVOKE, [["r", 2, None], ["append", 1, 1]]),
        _op(1, 1, OpType.INVOKE, [["r", 1, None], ["append", 2, 2]]),
        _op(2, 0, OpType.OK, [["r", 2, []], ["append", 1, 1]]),
        _op(3, 1, OpType.OK, [["r", 1, []], ["append", 2, 2]]),
        _op(4, 2, OpType.INVOKE, [["r", 1, None], ["r", 2, None]]),
        _op(5, 2, OpType.OK, [["r", 1, [1]], ["r", 2, [2]]]),
        _NEMESIS,
    ]
    (r,) = EtcdAppend().check(_run("etcd-append", {}, history))
    assert r.checker == "elle-list-append" and r.verdict.value == "invalid"
    assert "not strict-serializable: G2-item (1)" in r.summary
    assert r.stats["skipped_ops"] == {"nemesis": 1}
    (r,) = EtcdAppend().check(_run("etcd-append", {"consistency": "snapshot-isolation"}, history))
    assert r.verdict.value == "valid" and "allowed by snapshot-isolation: G2-item" in r.summary


def test_rw_register_check_finds_a_lost_update_and_passes_a_serial_history() -> None:
    lost = [
        _op(0, 0, OpType.INVOKE, [["r", 1, None], ["w", 1, 1]]),
        _op(1, 1, OpType.INVOKE, [["r", 1, None], ["w", 1, 2]]),
        _op(2, 0, OpType.OK, [["r", 1, None], ["w", 1, 1]]),
        _op(3, 1, OpType.OK, [["r", 1, None], ["w", 1, 2]]),
        _NEMESIS,
    ]
    (r,) = EtcdRwRegister().check(_run("etcd-rw-register", {}, lost))
    assert r.checker == "elle-rw-register" and r.verdict.value == "invalid"
    assert "lost-update (1)" in r.summary and r.stats["skipped_ops"] == {"nemesis": 1}
    (a,) = [a for a in r.anomalies if a["type"] == "lost-update"]
    assert a["txns"] == [2, 3] and "each read key 1 = nil and wrote it" in a["explanation"]
    # the run's own consistency option: read-committed allows it (reported, not failed)
    (r,) = EtcdRwRegister().check(_run("etcd-rw-register", {"consistency": "read-committed"}, lost))
    assert r.verdict.value == "valid" and "allowed by read-committed: " in r.summary
    serial = [
        _op(0, 0, OpType.INVOKE, [["r", 1, None], ["w", 1, 1]]),
        _op(1, 0, OpType.OK, [["r", 1, None], ["w", 1, 1]]),
        _op(2, 1, OpType.INVOKE, [["r", 1, None], ["w", 1, 2]]),
        _op(3, 1, OpType.OK, [["r", 1, 1], ["w", 1, 2]]),
    ]
    (r,) = EtcdRwRegister().check(_run("etcd-rw-register", {}, serial))
    assert r.verdict.value == "valid" and "consistent with strict-serializable" in r.summary
