"""Whether a write changes a key group (chaos.node.write_effect), evaluated on a real etcd member
as the node's proxy evaluates it: the test a write point fires on. Each case is a write the code
under test could send to take a firing away from the write the point is for."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from etcd3.etcdrpc import rpc_pb2 as pb

from chaos.node.write_effect import did_change, member_read, would_change
from tests.integration.lab1_support import EtcdServer

GROUP = ["/lab3/counter", "/lab3/dedup/"]
TXN, PUT, DELETE = "/etcdserverpb.KV/Txn", "/etcdserverpb.KV/Put", "/etcdserverpb.KV/DeleteRange"


@pytest.fixture
def member(tmp_path: Path) -> Iterator[tuple[Any, grpc.Channel]]:
    server = EtcdServer(tmp_path / "data")
    channel = grpc.insecure_channel(server.endpoint)
    c = server.client()
    try:
        yield c, channel
    finally:
        c.close()
        channel.close()
        server.stop()


def _put(key: str, value: str) -> pb.RequestOp:
    return pb.RequestOp(request_put=pb.PutRequest(key=key.encode(), value=value.encode()))


def _txn(compare: list[pb.Compare], success: list[Any], failure: Sequence[Any] = ()) -> bytes:
    return pb.TxnRequest(
        compare=compare, success=success, failure=list(failure)
    ).SerializeToString()


def _mod_is(key: str, rev: int) -> pb.Compare:
    return pb.Compare(key=key.encode(), target=pb.Compare.MOD, result=pb.Compare.EQUAL,
                      mod_revision=rev)  # fmt: skip


def test_before_a_write_only_a_change_of_the_groups_values_counts(member: Any) -> None:
    c, channel = member
    read = member_read(channel.unary_unary("/etcdserverpb.KV/Range"))
    c.put("/lab3/counter", "5")
    c.put("/lab3/dedup/e1", json.dumps({"task_id": "t1", "at": 1}))
    _, meta = c.get("/lab3/counter")
    rev = meta.mod_revision

    def changes(method: str, request: bytes) -> bool:
        return would_change(method, request, GROUP, read)

    put = pb.PutRequest(key=b"/lab3/counter", value=b"5").SerializeToString()
    assert not changes(PUT, put), "the counter rewritten with its own value"
    assert changes(PUT, pb.PutRequest(key=b"/lab3/counter", value=b"6").SerializeToString())
    assert changes(PUT, pb.PutRequest(key=b"/lab3/counter", value=b" 5").SerializeToString())
    outside = pb.PutRequest(key=b"/lab3/other", value=b"x").SerializeToString()
    assert not changes(PUT, outside)
    reordered = _put("/lab3/dedup/e1", json.dumps({"at": 1, "task_id": "t1"}))
    assert not changes(TXN, _txn([], [reordered]))
    assert changes(TXN, _txn([], [_put("/lab3/dedup/e2", "{}")])), "a new key"
    # a compare that fails now: the branch etcd would take is the failure branch
    assert not changes(
        TXN, _txn([_mod_is("/lab3/counter", rev + 100)], [_put("/lab3/counter", "9")])
    )
    assert changes(TXN, _txn([_mod_is("/lab3/counter", rev)], [_put("/lab3/counter", "9")]))
    assert changes(TXN, _txn([_mod_is("/lab3/counter", 1)], [], [_put("/lab3/counter", "9")]))
    # a value compare on a key that is not there fails, as in etcd
    absent = pb.Compare(key=b"/lab3/none", target=pb.Compare.VALUE, result=pb.Compare.EQUAL,
                        value=b"")  # fmt: skip
    assert not changes(TXN, _txn([absent], [_put("/lab3/counter", "9")]))
    # a nested transaction, evaluated as etcd would
    inner = pb.RequestOp(request_txn=pb.TxnRequest(
        compare=[_mod_is("/lab3/counter", rev + 100)], success=[_put("/lab3/counter", "9")]))  # fmt: skip
    assert not changes(TXN, _txn([], [inner]))
    # deletes: of a key that is there, of one that is not
    here = pb.DeleteRangeRequest(key=b"/lab3/dedup/e1").SerializeToString()
    gone = pb.DeleteRangeRequest(key=b"/lab3/dedup/e9").SerializeToString()
    assert changes(DELETE, here) and not changes(DELETE, gone)
    # what the proxy cannot decode counts as a change: the point fires as it always did
    assert changes(TXN, b"\xff\xff not a request")


def test_after_a_write_its_executed_branch_is_compared_with_the_values_before_it(
    member: Any,
) -> None:
    c, channel = member
    read = member_read(channel.unary_unary("/etcdserverpb.KV/Range"))
    txn = channel.unary_unary(TXN)
    c.put("/lab3/counter", "5")

    def sent(request: bytes) -> bool:
        return did_change(TXN, request, txn(request, timeout=5), GROUP, read)

    assert not sent(_txn([], [_put("/lab3/counter", "5")])), "the same value again"
    assert sent(_txn([], [_put("/lab3/counter", "6")]))
    assert not sent(_txn([_mod_is("/lab3/counter", 1)], [_put("/lab3/counter", "7")])), "failed"
    assert sent(_txn([], [_put("/lab3/dedup/e1", "{}")]))
    put = pb.PutRequest(key=b"/lab3/counter", value=b"6").SerializeToString()
    assert not did_change(PUT, put, channel.unary_unary(PUT)(put, timeout=5), GROUP, read)
