"""The author journal: the proxy's description of a write, matching etcd's record to it, and
lab1's judgement of every lease operation by its author (chaos.workloads.lab1.authors)."""

from __future__ import annotations

import json
from typing import Any

from etcd3 import etcdrpc

from chaos.checkers.journal import Authors, read_journal
from chaos.checkers.verdict import Verdict
from chaos.histories.ops import Event
from chaos.node.etcd_proxy import describe
from chaos.workloads.lab1.authors import lease_authors
from chaos.workloads.lab1.model import model_of

LOCK = "/lab1/locks/reconciliation"


# ---------------------------------------------------------------- the proxy's journal lines


def _txn(success: list[tuple[str, str]], failure: list[tuple[str, str]]) -> bytes:
    def ops(pairs: list[tuple[str, str]]) -> list[Any]:
        return [
            etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=k.encode(), value=v.encode()))
            for k, v in pairs
        ]

    req = etcdrpc.TxnRequest(success=ops(success), failure=ops(failure))
    return bytes(req.SerializeToString())


def _answer(succeeded: bool, revision: int) -> bytes:
    resp = etcdrpc.TxnResponse(succeeded=succeeded)
    resp.header.revision = revision
    return bytes(resp.SerializeToString())


def test_a_transaction_is_journaled_with_the_branch_etcd_ran_and_its_revision() -> None:
    req = _txn([("/a", "1")], [("/b", "2")])
    ran = describe("/etcdserverpb.KV/Txn", req, _answer(True, 41))
    assert ran["revision"] == 41 and ran["succeeded"] is True
    assert [p["key"] for p in ran["puts"]] == ["/a"]
    other = describe("/etcdserverpb.KV/Txn", req, _answer(False, 41))
    assert [p["key"] for p in other["puts"]] == ["/b"]
    # no answer (etcd failed, or the member stopped): both branches, no revision
    lost = describe("/etcdserverpb.KV/Txn", req, None)
    assert "revision" not in lost
    assert [p["key"] for p in lost["puts"]] == ["/a"]
    assert [p["key"] for p in lost["other_branch"]["puts"]] == ["/b"]


def test_a_lease_grant_and_a_delete_are_journaled_with_their_ids() -> None:
    resp = etcdrpc.LeaseGrantResponse(ID=77, TTL=3)
    resp.header.revision = 9
    got = describe(
        "/etcdserverpb.Lease/LeaseGrant",
        etcdrpc.LeaseGrantRequest(TTL=3).SerializeToString(),
        resp.SerializeToString(),
    )
    assert got["lease"] == 77 and got["ttl"] == 3
    dr = etcdrpc.DeleteRangeRequest(key=b"/x", range_end=b"/y")
    got = describe("/etcdserverpb.KV/DeleteRange", dr.SerializeToString(), None)
    assert got["deletes"] == [{"key": "/x", "range_end": "/y"}]


# ---------------------------------------------------------------- matching the record


def _w(node: str, rev: int | None, puts: dict[str, Any], *, outcome: str = "ok",
       seq: int = 0, t: float | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    e: dict[str, Any] = {
        "node": node, "seq": seq or (rev or 0), "method": "KV/Txn", "outcome": outcome,
        "succeeded": True, "deletes": [],
        "puts": [{"key": k, "value": json.dumps(v), "lease": 0} for k, v in puts.items()],
    }  # fmt: skip
    if rev is not None:
        e["revision"] = rev
    if t is not None:
        e["time"] = t
    return {**e, **extra}


def _final(entries: list[dict[str, Any]], **rest: Any) -> dict[str, Any]:
    return {"journal": {"source": "etcd-proxy", "entries": entries, "problems": [], "nodes": {},
                        "unread": {}}, **rest}  # fmt: skip


def test_a_revision_is_attributed_by_the_answer_that_carried_it() -> None:
    j = read_journal(_final([_w("n2", 7, {"/k": 1}), _w("n1", 8, {"/j": 2})]))
    assert j is not None
    a = Authors(j)
    got = a.author(7, ["/k"])
    assert got is not None and got.node == "n2" and got.how == "revision"
    assert a.author(7, ["/j"]) is None  # another key at that revision: not this write
    assert a.author(9, ["/k"]) is None  # a revision no proxy forwarded


def test_a_lost_answer_is_attributed_by_content_only_when_one_node_could_have_sent_it() -> None:
    one = read_journal(_final([_w("n1", None, {"/k": {"v": 1}}, outcome="error", seq=1)]))
    assert one is not None
    got = Authors(one).author(5, ["/k"], values={"/k": {"v": 1}})
    assert got is not None and got.node == "n1" and got.how == "content"
    two = read_journal(
        _final(
            [
                _w("n1", None, {"/k": {"v": 1}}, outcome="error", seq=1),
                _w("n2", None, {"/k": {"v": 1}}, outcome="error", seq=1),
            ]
        )
    )
    assert two is not None and Authors(two).author(5, ["/k"], values={"/k": {"v": 1}}) is None


def test_keys_deleted_when_a_lease_ran_out_belong_to_the_node_that_granted_it() -> None:
    grant = {"node": "n3", "seq": 1, "method": "Lease/LeaseGrant", "outcome": "ok", "lease": 5,
             "ttl": 2, "revision": 3}  # fmt: skip
    put = _w("n3", 4, {})
    put["puts"] = [{"key": "/claim", "value": "n3", "lease": 5}]
    j = read_journal(_final([grant, put]))
    assert j is not None
    got = Authors(j).author(9, [], deleted=["/claim"])
    assert got is not None and got.node == "n3" and got.how == "lease-expiry"


# ---------------------------------------------------------------- lab1: lease operations


def _version(rev: int, by: str, token: int, at: float, until: float) -> dict[str, Any]:
    return {"name": "reconciliation", "locked_by": by, "token": token, "locked_at": at,
            "lock_until": until, "rev": rev}  # fmt: skip


def _lock_write(node: str, v: dict[str, Any]) -> dict[str, Any]:
    return _w(node, v["rev"], {LOCK: {k: x for k, x in v.items() if k != "rev"}})


def _takeover() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """n1 is granted token 1 (rev 3) and its lease runs out; n2 is granted token 2 (rev 10)."""
    versions = [_version(3, "n1", 1, 100.0, 103.0), _version(10, "n2", 2, 104.0, 107.0)]
    return versions, [_lock_write("n1", versions[0]), _lock_write("n2", versions[1])]


def judge(versions: list[dict[str, Any]], entries: list[dict[str, Any]],
          orders: dict[str, Any] | None = None, events: list[Event] | None = None) -> Any:  # fmt: skip
    final = _final(entries, lock_history=versions, orders=orders or {},
                   config={"lock": "reconciliation"})  # fmt: skip
    return lease_authors(model_of([], events or [], final))


def test_grants_released_by_their_holders_are_valid() -> None:
    versions, entries = _takeover()
    release = _version(12, "n2", 2, 104.0, 105.0)
    r = judge([*versions, release], [*entries, _lock_write("n2", release)])
    assert r.verdict is Verdict.VALID, r.summary
    assert "etcd-proxy journals" in r.summary and r.stats["grants"] == 2


def test_a_release_by_a_replica_that_lost_the_grant_is_invalid_naming_both_grants() -> None:
    versions, entries = _takeover()
    # n1 resumes and "releases": it rewrites n2's record with an earlier lock_until
    release = _version(12, "n2", 2, 104.0, 104.5)
    r = judge([*versions, release], [*entries, _lock_write("n1", release)])
    assert r.verdict is Verdict.INVALID
    (a,) = r.anomalies
    assert a["kind"] == "lease-op-by-other" and a["operation"] == "release"
    assert [g["token"] for g in a["grants"]] == [2, 1]
    assert [g["holder"] for g in a["grants"]] == ["n2", "n1"]
    assert a["journal"]["node"] == "n1" and a["journal"]["revision"] == 12
    assert "n1 wrote the lock record at rev 12 over grant token 2 (held by n2" in r.summary
    assert "n1 held grant token 1 (held by n1, rev 3)" in r.summary


def test_a_renewal_that_writes_an_old_grant_back_is_invalid() -> None:
    versions, entries = _takeover()
    back = _version(12, "n1", 1, 100.0, 110.0)  # n1 renews "its" lease: token 1 over token 2
    r = judge([*versions, back], [*entries, _lock_write("n1", back)])
    assert r.verdict is Verdict.INVALID
    (a,) = r.anomalies
    assert a["kind"] == "lease-op-by-other" and "earlier grant (token 1)" in a["operation"]
    assert [g["token"] for g in a["grants"]] == [2, 1]


def test_the_record_naming_a_holder_does_not_make_it_the_author() -> None:
    versions, entries = _takeover()
    # n3 writes a grant that claims n2 as its holder
    forged = _version(12, "n2", 3, 108.0, 111.0)
    r = judge([*versions, forged], [*entries, _lock_write("n3", forged)])
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["kind"] == "grant-forged-holder"
    assert "n3 wrote the lock record at rev 12 naming 'n2'" in r.summary


def test_a_version_no_proxy_forwarded_is_invalid_and_never_valid() -> None:
    versions, entries = _takeover()
    around = _version(12, "n2", 2, 104.0, 104.5)
    r = judge([*versions, around], entries)
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["kind"] == "unauthored"
    assert "written around the nodes' etcd proxies" in r.summary
    # a write of the lock whose answer two nodes' proxies never saw may have been it: unknown
    lost = [_w(n, None, {LOCK: {"x": 1}}, outcome="error", seq=50) for n in ("n1", "n3")]
    r = judge([*versions, around], [*entries, *lost])
    assert r.verdict is Verdict.UNKNOWN and "answer the proxy never saw" in r.summary


def test_an_order_write_under_another_replicas_token_is_invalid() -> None:
    versions, entries = _takeover()
    # n1 (which lost the lock) writes o1 with n2's token 2: fencing cannot tell, the journal can
    orders = {"o1": {"applied": [{"night": 1, "token": 2, "node": "n2", "rev": 11}]}}
    write = _w("n1", 11, {"/lab1/orders/o1": {"balance": 4}})
    r = judge(versions, [*entries, write], orders)
    assert r.verdict is Verdict.INVALID
    (a,) = r.anomalies
    assert a["kind"] == "write-under-other-grant" and a["claimed_node"] == "n2"
    assert a["author"] == "n1" and [g["token"] for g in a["grants"]] == [2, 1]
    # the same write by n2: valid
    write = _w("n2", 11, {"/lab1/orders/o1": {"balance": 4}})
    assert judge(versions, [*entries, write], orders).verdict is Verdict.VALID


def test_forged_txn_events_change_nothing() -> None:
    versions, entries = _takeover()
    release = _version(12, "n2", 2, 104.0, 104.5)
    # n1's service claims the transaction was n2's: the journal says n1's proxy forwarded it
    forged = [Event(time=5.0, node="n2", component="orders", kind="txn", pid=1,
                    data={"fn": "release", "n": 1, "ok": True, "rev": 12})]  # fmt: skip
    r = judge([*versions, release], [*entries, _lock_write("n1", release)], events=forged)
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["author"] == "n1"


def test_a_run_without_a_journal_is_unknown_never_valid() -> None:
    r = lease_authors(model_of([], [], {"lock_history": [_version(3, "n1", 1, 1.0, 2.0)]}))
    assert r.verdict is Verdict.UNKNOWN and "No author journal" in r.summary


# ---------------------------------------------------------------- collection from the nodes


def test_the_journals_are_collected_per_node_and_a_line_naming_another_node_is_refused(
    tmp_path: Any,
) -> None:
    from chaos.workloads.systems import etcd_proxy
    from tests.unit.test_nemesis_clock import make_ctx

    ctx = make_ctx(tmp_path)
    n1, n2 = ctx.cluster.nodes[:2]
    good = {"node": n1, "seq": 1, "method": "KV/Txn", "outcome": "ok", "revision": 5,
            "mono": ctx.origin + 2.5}  # fmt: skip
    forged = {**good, "node": n2}  # a line in n1's journal claiming n2 wrote it
    ctx.cluster.put_file(
        n1, etcd_proxy.JOURNAL, f"{json.dumps(good)}\nnot json\n{json.dumps(forged)}\n".encode()
    )
    got = etcd_proxy.collect(ctx)
    assert [e["node"] for e in got["entries"]] == [n1]
    assert got["entries"][0]["time"] == 2.5
    assert got["nodes"] == {n1: 1}
    assert f"{n1}: journal line 2 is not JSON" in got["problems"]
    assert f"{n1}: journal line 3 names another node" in got["problems"]
    assert any(p.startswith(f"{n2}: no journal") for p in got["problems"])
    # which nodes were not read, as a field a checker reads (not the problems' words)
    assert got["unread"] == {n: "no journal" for n in ctx.cluster.nodes if n != n1}


def test_the_collection_records_a_journal_it_could_not_fetch_or_had_to_cut(
    tmp_path: Any, monkeypatch: Any
) -> None:
    from chaos.workloads.systems import etcd_proxy
    from tests.unit.test_nemesis_clock import make_ctx

    ctx = make_ctx(tmp_path)
    n1, n2 = ctx.cluster.nodes[:2]
    line = {"node": n1, "seq": 1, "method": "KV/Txn", "outcome": "ok", "revision": 5}
    ctx.cluster.put_file(n1, etcd_proxy.JOURNAL, (json.dumps(line) + "\n").encode() * 3)
    monkeypatch.setattr(etcd_proxy, "MAX_JOURNAL", len(json.dumps(line)) * 2 + 3)
    fetch = ctx.cluster.get_file

    def get_file(node: str, path: str) -> bytes | None:
        if node == n2:
            raise OSError("the node is gone")
        return fetch(node, path)

    monkeypatch.setattr(ctx.cluster, "get_file", get_file)
    got = etcd_proxy.collect(ctx)
    assert got["unread"][n1] == f"journal cut at {etcd_proxy.MAX_JOURNAL} bytes"
    assert got["unread"][n2] == "no journal (OSError: the node is gone)"
    assert got["nodes"][n1] == 2  # what was read of a cut journal is kept
    j = read_journal({"journal": got})
    assert j is not None and j.unread == got["unread"]


def test_operations_on_a_grant_no_journal_names_are_not_judged_by_author() -> None:
    versions, entries = _takeover()
    # n3's grant (rev 12) was answered to nobody the proxy saw, with two candidates: unknown;
    # its own release at rev 13 must not read as "a release by a replica that does not hold it"
    grant = _version(12, "n3", 3, 108.0, 111.0)
    release = _version(13, "n3", 3, 108.0, 109.0)
    lost = [_w(n, None, {LOCK: {"x": 1}}, outcome="error", seq=50) for n in ("n1", "n3")]
    r = judge([*versions, grant, release], [*entries, *lost, _lock_write("n3", release)])
    assert r.verdict is Verdict.UNKNOWN, r.summary
    assert not [a for a in r.anomalies if a["kind"] == "lease-op-by-other"]


def _around() -> dict[str, Any]:
    """A run with one version of the lock record no journal line accounts for."""
    versions, entries = _takeover()
    around = _version(12, "n2", 2, 104.0, 104.5)
    return _final(entries, lock_history=[*versions, around], orders={},
                  config={"lock": "reconciliation"})  # fmt: skip


def test_a_write_without_author_is_unknown_when_a_nodes_journal_could_not_be_read() -> None:
    final = _around()
    final["journal"]["problems"] = ["n2: NotFound: no such file", "n2: no journal"]
    final["journal"]["unread"] = {"n2": "no journal (NotFound: no such file)"}
    r = lease_authors(model_of([], [], final))
    # n2's journal was never read: its proxy may have forwarded that write
    assert r.verdict is Verdict.UNKNOWN, r.summary
    assert "the journal of n2 could not be read (n2: no journal (NotFound" in r.summary
    assert r.stats["unread_journals"] == {"n2": "no journal (NotFound: no such file)"}
    # a bad line is not a missing journal: the write is still unaccounted for
    final["journal"]["problems"] = ["n2: journal line 3 is not JSON"]
    final["journal"]["unread"] = {}
    r = lease_authors(model_of([], [], final))
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["kind"] == "unauthored", r.summary


def test_whether_a_journal_was_read_is_decided_by_the_collections_record_not_by_words() -> None:
    # problems that read like a missing journal, while the collection read every node whole
    final = _around()
    final["journal"]["problems"] = ["n2: no journal", "n2: journal cut at 5 bytes",
                                    "n2: KeyError: 'x'"]  # fmt: skip
    final["journal"]["unread"] = {}
    r = lease_authors(model_of([], [], final))
    assert r.verdict is Verdict.INVALID, r.summary
    assert "written around the nodes' etcd proxies" in r.summary
    # and a node named unread, with no problem in words at all
    final["journal"]["problems"] = []
    final["journal"]["unread"] = {"n3": "journal cut at 33554432 bytes"}
    r = lease_authors(model_of([], [], final))
    assert r.verdict is Verdict.UNKNOWN and "n3: journal cut at 33554432 bytes" in r.summary


def test_a_run_stored_before_the_journal_named_its_unread_nodes_is_unknown_never_valid() -> None:
    final = _around()
    del final["journal"]["unread"]
    final["journal"]["problems"] = ["n2: journal line 3 is not JSON"]
    r = lease_authors(model_of([], [], final))
    assert r.verdict is Verdict.UNKNOWN, r.summary
    assert "stored before the journal named the nodes it could not read" in r.summary
    assert "n2: journal line 3 is not JSON" in r.summary and r.stats["unread_journals"] is None
    # without a problem its collection would have named, every node's journal was read
    final["journal"]["problems"] = []
    assert lease_authors(model_of([], [], final)).verdict is Verdict.INVALID
    # a malformed record is not "every journal was read" either
    final["journal"]["problems"] = ["n1: no journal"]
    final["journal"]["unread"] = ["n1"]
    assert lease_authors(model_of([], [], final)).verdict is Verdict.UNKNOWN
