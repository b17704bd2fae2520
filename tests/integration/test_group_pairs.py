"""The state a held call's early release compares (chaos.workloads.systems.write_points), read
from a real etcd: only a change of values counts, never a revision moved by a write of what is
already there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.workloads.systems.write_points import group_pairs
from tests.integration.lab1_support import EtcdServer


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[Any]:
    server = EtcdServer(tmp_path / "data")
    c = server.client()
    try:
        yield c
    finally:
        c.close()
        server.stop()


def test_a_rewrite_with_the_same_values_is_no_change_and_a_real_write_is(etcd: Any) -> None:
    groups = ["/lab3/counter", "/lab3/dedup/"]
    etcd.put("/lab3/counter", "5")
    etcd.put("/lab3/dedup/t1", json.dumps({"task": "t1", "at": 3}))
    etcd.put("/lab3/other", "outside the group")
    start = group_pairs(etcd, groups)
    rev = etcd.status().raft_index

    # the code under test rewrites what is there: the revision moves, the values do not
    etcd.put("/lab3/counter", "5")
    etcd.put("/lab3/dedup/t1", json.dumps({"at": 3, "task": "t1"}))
    etcd.put("/lab3/other", "changed, but outside the group")
    assert etcd.status().raft_index > rev
    assert group_pairs(etcd, groups) == start

    etcd.put("/lab3/counter", "6")  # another worker's commit: a value new to the group
    moved = group_pairs(etcd, groups)
    assert moved - start
    etcd.put("/lab3/dedup/t2", "{}")  # a new record under a prefix
    grown = group_pairs(etcd, groups)
    assert grown - moved
    etcd.put("/lab3/counter", " 6")  # not the canonical form: the record reads it as text
    texted = group_pairs(etcd, groups)
    assert texted - grown
    etcd.delete("/lab3/dedup/t2")  # a key leaving adds nothing
    assert not group_pairs(etcd, groups) - texted
