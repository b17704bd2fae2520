"""lab1's built-in solutions on an in-memory etcd: each buggy teaching example has exactly the bug
its docstring names, and the reference does not (issue 11). The fake client implements the part
of python-etcd3 that ``chaos.node.store.JsonStore`` uses: get, version/mod compares, put, txn."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from chaos.node.solution import missing_functions
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import ALREADY, APPLIED, REQUIRED, STALE, Change, Lock, Store
from chaos.workloads.lab1.service import AcquireStore

SOLUTIONS = Path(__file__).resolve().parents[2] / "chaos" / "workloads" / "lab1" / "solutions"
BUGGY = [
    "no_fencing",
    "check_lease_before_write",
    "acquire_without_cas",
    "off_by_one_night",
    "token_reuse",
    "renew_without_check",
]


@dataclass
class _Meta:
    mod_revision: int


@dataclass
class _Cmp:
    kind: str
    key: str
    want: int


class _Tx:
    def version(self, key: str) -> Any:
        return _Eq("version", key)

    def mod(self, key: str) -> Any:
        return _Eq("mod", key)

    def put(self, key: str, value: str) -> Any:
        return ("put", key, value)


@dataclass
class _Eq:
    kind: str
    key: str

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        assert isinstance(other, int)
        return _Cmp(self.kind, self.key, other)


class FakeEtcd:
    def __init__(self) -> None:
        self.rev = 1
        self.data: dict[str, tuple[bytes, int, int]] = {}  # value, mod revision, version
        self.transactions = _Tx()

    def get(self, key: str) -> tuple[bytes | None, _Meta | None]:
        if key not in self.data:
            return None, None
        value, mod, _ = self.data[key]
        return value, _Meta(mod)

    def transaction(self, compare: list[Any], success: list[Any], failure: list[Any]) -> Any:
        def holds(c: _Cmp) -> bool:
            _, mod, version = self.data.get(c.key, (b"", 0, 0))
            return (mod if c.kind == "mod" else version) == c.want

        ok = all(holds(c) for c in compare)
        self.rev += 1
        for _, key, value in success if ok else failure:
            _, _, version = self.data.get(key, (b"", 0, 0))
            self.data[key] = (value.encode(), self.rev, version + 1)
        return ok, []


def load(name: str) -> ModuleType:
    return importlib.import_module(f"chaos.workloads.lab1.solutions.{name}.protocol")


def lock(me: str) -> Lock:
    return Lock(name=keys.JOB, me=me, at_most=3.0, at_least=0.2)


@pytest.mark.parametrize("name", ["reference", *BUGGY])
def test_every_built_in_solution_is_complete(name: str) -> None:
    assert missing_functions(SOLUTIONS / name, REQUIRED) == []
    doc = load(name).__doc__ or ""
    assert doc.startswith("BUGGY teaching example") == (name != "reference")


def test_acquire_without_cas_overwrites_a_lease_taken_after_its_read() -> None:
    etcd = FakeEtcd()
    store = Store(etcd, node="n1")
    held: list[Any] = []

    def n2_acquires_meanwhile() -> None:
        # n1 read the absent record; before its write, n2 takes the lock (reference acquire)
        if not held:
            held.append(load("reference").acquire(Store(etcd, node="n2"), lock("n2"), 100.0))

    n1 = AcquireStore(store, n2_acquires_meanwhile)
    assert load("acquire_without_cas").acquire(n1, lock("n1"), 100.0) == 1
    assert held == [1]  # both got token 1
    record, _ = store.get(keys.lock(keys.JOB))
    assert record["locked_by"] == "n1"
    # the reference's compare refuses the same interleaving
    etcd, held = FakeEtcd(), []
    store = Store(etcd, node="n1")
    n1 = AcquireStore(store, n2_acquires_meanwhile)
    assert load("reference").acquire(n1, lock("n1"), 100.0) is None


def test_token_reuse_keeps_the_token_on_a_re_acquire_by_the_same_replica() -> None:
    for name, second in (("token_reuse", 1), ("reference", 2)):
        store = Store(FakeEtcd(), node="n1")
        p = load(name)
        assert p.acquire(store, lock("n1"), 100.0) == 1
        assert p.release(store, lock("n1"), 1, 100.3)
        assert p.acquire(store, lock("n1"), 101.0) == second, name


def test_off_by_one_night_applies_the_same_night_again() -> None:
    for name, outcome in (("off_by_one_night", APPLIED), ("reference", ALREADY)):
        store = Store(FakeEtcd(), node="n1")
        p = load(name)
        # the stale holder (token 1) reached o1 first; the new holder (token 2) comes second
        assert p.write_change(store, lock("n1"), Change(order="o1", night=1, amount=3, token=1))
        second = p.write_change(store, lock("n2"), Change(order="o1", night=1, amount=3, token=2))
        assert second == outcome, name
        row, _ = store.read_order("o1")
        assert row["balance"] == (6 if outcome == APPLIED else 3)
    # and the fencing token still rejects the stale holder after the new one wrote
    store = Store(FakeEtcd(), node="n2")
    p = load("off_by_one_night")
    assert p.write_change(store, lock("n2"), Change(order="o1", night=1, amount=3, token=2))
    late = p.write_change(store, lock("n1"), Change(order="o1", night=1, amount=3, token=1))
    assert late == STALE


def test_renew_without_check_extends_a_lease_that_is_no_longer_its_own() -> None:
    for name, renewed in (("renew_without_check", True), ("reference", False)):
        store = Store(FakeEtcd(), node="n1")
        p = load(name)
        assert p.acquire(store, lock("n1"), 100.0) == 1
        assert p.acquire(store, lock("n2"), 103.5) == 2  # n1's lease expired; n2 took over
        assert p.extend(store, lock("n1"), 1, 104.0) is renewed, name
        record, _ = store.get(keys.lock(keys.JOB))
        assert record["locked_by"] == "n2" and record["token"] == 2
