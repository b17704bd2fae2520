"""What the nodes' etcd proxies forward (chaos.node.etcd_scope) and how a refusal is judged
(chaos.checkers.etcd_scope): issue 29's side channels through etcd."""

from __future__ import annotations

from typing import Any

import pytest
from etcd3 import etcdrpc

from chaos.checkers.etcd_scope import etcd_scope
from chaos.checkers.verdict import Verdict
from chaos.node.etcd_scope import prefix_end, range_refusal, refusal, watch_refusal

P = b"/lab3/"


def test_prefix_end_is_the_first_key_after_the_prefix() -> None:
    assert prefix_end(b"/lab3/") == b"/lab30"
    assert prefix_end(b"a\xff") == b"b"


@pytest.mark.parametrize(
    ("key", "end", "inside"),
    [
        (b"/lab3/counter", b"", True),
        (b"/lab3/tasks/", b"/lab3/tasks0", True),
        (b"/lab3/", b"/lab30", True),
        (b"/side/x", b"", False),
        (b"/lab3", b"", False),  # the prefix without its slash is another key
        (b"/lab3/", b"\0", False),  # every key from /lab3/ on
        (b"/lab3/", b"/lab4", False),
        (b"/lab3/a", b"/lab30\0", False),
    ],
)
def test_a_range_is_inside_only_when_its_start_and_end_are(
    key: bytes, end: bytes, inside: bool
) -> None:
    assert (range_refusal(key, end, P) is None) is inside


def _txn(**kw: Any) -> bytes:
    return bytes(etcdrpc.TxnRequest(**kw).SerializeToString())


def _put(key: bytes) -> Any:
    return etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=key, value=b"1"))


def test_every_key_of_a_transaction_is_held_to_the_prefix() -> None:
    inside = _txn(compare=[etcdrpc.Compare(key=P + b"counter")], success=[_put(P + b"counter")])
    assert refusal("etcdserverpb.KV/Txn", inside, P) is None
    compare = _txn(compare=[etcdrpc.Compare(key=b"/side/flag")], success=[_put(P + b"counter")])
    assert "a compare: key '/side/flag'" in (refusal("etcdserverpb.KV/Txn", compare, P) or "")
    failure = _txn(success=[_put(P + b"x")], failure=[_put(b"/side/flag")])
    assert "'/side/flag' is outside" in (refusal("etcdserverpb.KV/Txn", failure, P) or "")
    nested = _txn(success=[etcdrpc.RequestOp(request_txn=etcdrpc.TxnRequest(
        success=[_put(b"/side/deep")]))])  # fmt: skip
    assert "'/side/deep'" in (refusal("etcdserverpb.KV/Txn", nested, P) or "")
    ranged = _txn(success=[etcdrpc.RequestOp(request_range=etcdrpc.RangeRequest(
        key=P, range_end=b"\0"))])  # fmt: skip
    assert "reaches past" in (refusal("etcdserverpb.KV/Txn", ranged, P) or "")


def test_puts_ranges_and_deletes_outside_the_prefix_are_refused() -> None:
    put = etcdrpc.PutRequest(key=b"/side/x", value=b"1").SerializeToString()
    assert refusal("etcdserverpb.KV/Put", put, P)
    get = etcdrpc.RangeRequest(key=b"/", range_end=b"\0").SerializeToString()
    assert refusal("etcdserverpb.KV/Range", get, P)
    ok = etcdrpc.RangeRequest(key=P, range_end=prefix_end(P)).SerializeToString()
    assert refusal("etcdserverpb.KV/Range", ok, P) is None
    delete = etcdrpc.DeleteRangeRequest(key=b"/lab1/locks/x").SerializeToString()
    assert refusal("etcdserverpb.KV/DeleteRange", delete, P)


@pytest.mark.parametrize(
    "method",
    [
        "etcdserverpb.Auth/AuthEnable",
        "etcdserverpb.Auth/UserAdd",
        "etcdserverpb.KV/Compact",
        "etcdserverpb.Maintenance/Defragment",
        "etcdserverpb.Maintenance/Snapshot",
        "etcdserverpb.Maintenance/Alarm",
        "etcdserverpb.Cluster/MemberRemove",
        "etcdserverpb.Cluster/MemberList",
        "etcdserverpb.Lease/LeaseLeases",
        "v3lockpb.Lock/Lock",
    ],
)
def test_every_call_a_lab_does_not_need_is_refused_whatever_it_carries(method: str) -> None:
    assert "not a call a lab's service may make" in (refusal(method, b"", P) or "")
    assert refusal(method, b"", None)  # also where no prefix is set


def test_the_calls_a_lab_needs_pass() -> None:
    for method in ("Lease/LeaseGrant", "Lease/LeaseRevoke", "Lease/LeaseTimeToLive"):
        assert refusal("etcdserverpb." + method, b"", P) is None


def test_a_watch_outside_the_prefix_is_refused() -> None:
    def create(key: bytes, end: bytes = b"") -> bytes:
        req = etcdrpc.WatchRequest(
            create_request=etcdrpc.WatchCreateRequest(key=key, range_end=end)
        )
        return bytes(req.SerializeToString())

    assert watch_refusal(create(P, prefix_end(P)), P) is None
    assert "a watch: key '/side/x'" in (watch_refusal(create(b"/side/x"), P) or "")
    assert watch_refusal(create(P, b"\0"), P)
    cancel = etcdrpc.WatchRequest(cancel_request=etcdrpc.WatchCancelRequest(watch_id=1))
    assert watch_refusal(bytes(cancel.SerializeToString()), P) is None


def _journal(*entries: dict[str, Any], unread: Any = None) -> dict[str, Any]:
    return {"journal": {"source": "etcd-proxy", "entries": list(entries), "problems": [],
                        "nodes": {"n1": len(entries)},
                        "unread": {} if unread is None else unread}}  # fmt: skip


def test_a_refused_call_in_the_journal_is_invalid_and_named() -> None:
    ok = {"node": "n1", "seq": 1, "method": "KV/Txn", "outcome": "ok", "revision": 5}
    assert etcd_scope(_journal(ok)).verdict is Verdict.VALID
    bad = {"node": "n2", "seq": 2, "method": "Auth/AuthEnable", "outcome": "refused",
           "reason": "etcdserverpb.Auth/AuthEnable is not a call a lab's service may make",
           "time": 3.25}  # fmt: skip
    got = etcd_scope(_journal(ok, bad))
    assert got.verdict is Verdict.INVALID
    assert "the etcd proxy on n2 refused Auth/AuthEnable at 3.25 s" in got.summary
    assert got.anomalies[0]["kind"] == "refused-etcd-call"


def test_without_every_journal_a_refusal_cannot_be_ruled_out() -> None:
    assert etcd_scope({}).verdict is Verdict.UNKNOWN
    got = etcd_scope(_journal(unread={"n3": "no journal"}))
    assert got.verdict is Verdict.UNKNOWN and "n3: no journal" in got.summary
    # a refusal is named even when another node's journal is missing
    bad = {"node": "n1", "method": "KV/Compact", "outcome": "refused", "reason": "r"}
    assert etcd_scope(_journal(bad, unread={"n3": "x"})).verdict is Verdict.INVALID
