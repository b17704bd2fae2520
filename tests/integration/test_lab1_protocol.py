"""lab1 solutions called directly against a real etcd: the lease table, the token and the fenced
write, step by step (``now`` is passed explicitly, so lease expiry needs no waiting)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.final_state import finished, read_final
from chaos.workloads.lab1.protocol_api import ALREADY, APPLIED, STALE, Change, Lock, Store
from chaos.workloads.lab1.solutions.check_lease_before_write import protocol as checked
from chaos.workloads.lab1.solutions.no_fencing import protocol as unfenced
from chaos.workloads.lab1.solutions.reference import protocol as ref
from tests.integration.lab1_support import EtcdServer, etcd, etcd_server

# A real etcd process on this host (no Docker): too slow for the unit suite.
pytestmark = pytest.mark.integration

__all__ = ["etcd", "etcd_server"]  # fixtures used by name below

T0 = 1_000.0  # a "now" far in the past of the real clock: tests pass time explicitly


def lock(me: str) -> Lock:
    return Lock(name=keys.JOB, me=me, at_most=30.0, at_least=2.0)


@pytest.fixture
def client(etcd: EtcdServer) -> Iterator[Any]:
    c = etcd.client()
    yield c
    c.close()


def store(client: Any, node: str = "n1", **kw: Any) -> Store:
    return Store(client, node=node, **kw)


def record(client: Any) -> dict[str, Any]:
    value, _ = store(client).get(keys.lock(keys.JOB))
    assert isinstance(value, dict)
    return value


def test_acquire_inserts_then_waits_for_lock_until(client: Any) -> None:
    s = store(client)
    assert ref.acquire(s, lock("n1"), T0) == 1
    assert record(client) == {
        "name": keys.JOB,
        "lock_until": T0 + 30,
        "locked_at": T0,
        "locked_by": "n1",
        "token": 1,
    }
    assert ref.acquire(s, lock("n2"), T0 + 29.9) is None  # still held
    assert ref.acquire(s, lock("n2"), T0 + 30) == 2  # lock_until <= now: taken over
    assert record(client)["locked_by"] == "n2"


def test_release_keeps_the_lock_for_at_least(client: Any) -> None:
    s = store(client)
    assert ref.acquire(s, lock("n1"), T0) == 1
    assert ref.release(s, lock("n1"), 1, T0 + 0.5)
    assert record(client)["lock_until"] == T0 + 2.0  # max(locked_at + at_least, now)
    assert ref.acquire(s, lock("n2"), T0 + 1.9) is None
    assert ref.acquire(s, lock("n2"), T0 + 2.0) == 2
    # a release after at_least frees the lock at once
    assert ref.release(s, lock("n2"), 2, T0 + 10)
    assert record(client)["lock_until"] == T0 + 10


def test_stale_holder_cannot_release_or_extend_its_successors_lock(client: Any) -> None:
    s = store(client)
    assert ref.acquire(s, lock("n1"), T0) == 1
    assert ref.acquire(s, lock("n2"), T0 + 31) == 2
    before = record(client)
    assert not ref.release(s, lock("n1"), 1, T0 + 40)
    assert not ref.extend(s, lock("n1"), 1, T0 + 40)
    assert record(client) == before
    assert ref.extend(s, lock("n2"), 2, T0 + 40)
    assert record(client)["lock_until"] == T0 + 70


def test_one_winner_among_concurrent_acquirers_and_tokens_only_grow(client: Any) -> None:
    tokens: list[int] = []
    for round_ in range(3):
        now = T0 + 100 * round_
        got: dict[str, int | None] = {}

        def take(me: str, now: float = now, got: dict[str, int | None] = got) -> None:
            got[me] = ref.acquire(store(client, me), lock(me), now)

        threads = [threading.Thread(target=take, args=(f"n{i}",)) for i in range(1, 7)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [tok for tok in got.values() if tok is not None]
        assert len(winners) == 1, got
        tokens.append(winners[0])
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def change(order: str, night: int, token: int) -> Change:
    return Change(order=order, night=night, amount=keys.change_amount(order, night), token=token)


def applied_keys(client: Any, order: str, night: int) -> int:
    return len(list(client.get_prefix(keys.applied_prefix(order, night), keys_only=True)))


def test_fenced_write_rejects_lower_tokens_and_repeats(client: Any) -> None:
    s = store(client)
    assert ref.write_change(s, lock("n2"), change("o1", 1, 5)) == APPLIED
    assert ref.write_change(s, lock("n1"), change("o1", 1, 3)) == STALE  # last_token 5 > 3
    assert ref.write_change(s, lock("n2"), change("o1", 1, 5)) == ALREADY  # same night again
    assert ref.write_change(s, lock("n3"), change("o1", 2, 5)) == APPLIED  # equal token is fine
    assert ref.write_change(s, lock("n3"), change("o1", 3, 6)) == APPLIED
    row, _ = s.read_order("o1")
    assert row == {
        "order": "o1",
        "balance": sum(keys.change_amount("o1", n) for n in (1, 2, 3)),
        "last_token": 6,
        "night": 3,
    }
    assert [applied_keys(client, "o1", n) for n in (1, 2, 3)] == [1, 1, 1]


def test_unfenced_write_applies_a_stale_token_twice(client: Any) -> None:
    s = store(client)
    assert ref.write_change(s, lock("n2"), change("o1", 1, 5)) == APPLIED
    assert unfenced.write_change(s, lock("n1"), change("o1", 1, 3)) == APPLIED
    assert applied_keys(client, "o1", 1) == 2
    row, _ = s.read_order("o1")
    assert row["last_token"] == 3  # the stale token overwrote the newer one
    assert row["balance"] == 2 * keys.change_amount("o1", 1)


def test_checked_lease_only_helps_when_nothing_happens_after_the_check(client: Any) -> None:
    s = store(client)
    assert ref.acquire(s, lock("n1"), s.now()) == 1
    assert checked.write_change(s, lock("n1"), change("o1", 1, 1)) == APPLIED

    # between n1's check and its transaction, n2 takes the lock (as after a pause) and writes
    def takeover(c: Change) -> None:
        client.put(keys.lock(keys.JOB), '{"lock_until": 0, "token": 1}')
        t = ref.acquire(s2, lock("n2"), s2.now())
        assert t == 2
        assert ref.write_change(s2, lock("n2"), change("o2", 1, t)) == APPLIED

    s2 = store(client, "n2")
    s1 = store(client, "n1", before_write=takeover)
    assert checked.write_change(s1, lock("n1"), change("o2", 1, 1)) == APPLIED
    assert applied_keys(client, "o2", 1) == 2
    # the check itself works: after the takeover, n1 is refused before writing
    assert checked.write_change(store(client), lock("n1"), change("o3", 1, 1)) == STALE


def test_reference_is_safe_when_the_takeover_lands_between_read_and_commit(client: Any) -> None:
    s2 = store(client, "n2")

    def takeover(c: Change) -> None:
        if applied_keys(client, c.order, c.night) == 0:
            assert ref.write_change(s2, lock("n2"), change(c.order, c.night, 2)) == APPLIED

    s1 = store(client, "n1", before_write=takeover)
    assert ref.write_change(s1, lock("n1"), change("o1", 1, 1)) == STALE
    assert applied_keys(client, "o1", 1) == 1


def test_before_write_fires_for_order_writes_only(client: Any) -> None:
    seen: list[Change] = []
    s = store(client, before_write=seen.append)
    assert ref.acquire(s, lock("n1"), T0) == 1
    assert seen == []
    c = change("o4", 1, 1)
    assert ref.write_change(s, lock("n1"), c) == APPLIED
    assert seen == [c]


def test_final_state_shape(client: Any, etcd: EtcdServer) -> None:
    s = store(client)
    client.put(keys.CONFIG, '{"order_ids": ["o1", "o2"], "nights": 2, "lock": "reconciliation"}')
    assert ref.acquire(s, lock("n1"), T0) == 1
    for o in ("o1",):
        assert ref.write_change(s, lock("n1"), change(o, 1, 1)) == APPLIED
        assert unfenced.write_change(s, lock("n1"), change(o, 1, 1)) == APPLIED
    s.txn([], [s.put(keys.night_done(1), {"night": 1, "node": "n1", "token": 1})])
    final = read_final([etcd.endpoint])
    assert final["lock"]["token"] == 1
    assert final["nights_done"] == [1]
    assert set(final["orders"]) == {"o1", "o2"}
    assert final["orders"]["o2"] == {
        "balance": 0,
        "last_token": 0,
        "night": 0,
        "rev": 0,
        "applied": [],
    }
    apps = final["orders"]["o1"]["applied"]
    assert [(a["night"], a["token"], a["node"]) for a in apps] == [(1, 1, "n1"), (1, 1, "n1")]
    assert apps[0]["rev"] < apps[1]["rev"]
    assert not finished(final)  # night 2 is still owed
    s.txn([], [s.put(keys.night_done(2), {"night": 2, "node": "n1", "token": 1})])
    assert finished(read_final([etcd.endpoint]))
