"""The etcd proxy's scope on a real etcd (issue 29, side channels through etcd): through the proxy
a client gets the lab's keys, leases and watches, and nothing else — ``AuthEnable`` (on main it
locked chaos out of etcd), compaction, members, keys and ranges outside the prefix, in a put, a
read, a transaction's compare or branch, a watch — each refused with PERMISSION_DENIED before
etcd sees it, and journaled as refused with its reason. etcd itself is untouched: authentication
still off, the key outside never written, its history whole."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.integration.conftest import REPO
from tests.integration.lab1_support import EtcdServer, free_port

pytestmark = pytest.mark.integration
PREFIX = "/lab3/"


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EtcdServer, int, Path]]:
    d = tmp_path_factory.mktemp("scope")
    etcd = EtcdServer(d / "data")
    port = free_port()
    state = d / "proxy"
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaos.node.etcd_proxy", "--listen", f"127.0.0.1:{port}",
         "--upstream", etcd.endpoint, "--node", "n1", "--state", str(state),
         "--prefix", PREFIX],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        import etcd3

        deadline = time.monotonic() + 20
        while True:
            try:
                c = etcd3.client("127.0.0.1", port, timeout=1)
                c.get(PREFIX + "probe")
                c.close()
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        yield etcd, port, state
    finally:
        proc.terminate()
        proc.wait(10)
        etcd.stop()


def _code(call: Any) -> str:
    try:
        call()
    except grpc.RpcError as e:
        return str(e.code().name) if isinstance(e, grpc.Call) else "error"
    except Exception as e:  # etcd3 wraps some errors: the gRPC one is its cause
        cause = e.__cause__ or e.__context__
        if isinstance(cause, grpc.Call):
            return str(cause.code().name)
        return f"{type(e).__name__}: {e}"
    return "OK"


def _journal(state: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (state / "journal.jsonl").read_text().splitlines() if x]


def test_the_lab_gets_its_keys_leases_and_watches_and_nothing_else(
    proxied: tuple[EtcdServer, int, Path],
) -> None:
    import etcd3
    from etcd3 import etcdrpc

    etcd, port, state = proxied
    c = etcd3.client("127.0.0.1", port, timeout=3)
    auth = etcdrpc.AuthStub(c.channel)
    # what a lab does: all answered
    lease = c.lease(5)
    assert _code(lambda: c.put(PREFIX + "counter", "0", lease=lease)) == "OK"
    assert _code(lambda: list(c.get_prefix(PREFIX))) == "OK"
    ok = c.transaction(compare=[c.transactions.version(PREFIX + "x") == 0],
                       success=[c.transactions.put(PREFIX + "x", "1")], failure=[])  # fmt: skip
    assert ok[0] is True
    watch = etcdrpc.WatchStub(c.channel)
    inside = etcdrpc.WatchRequest(create_request=etcdrpc.WatchCreateRequest(
        key=PREFIX.encode(), range_end=b"/lab30"))  # fmt: skip
    stream = watch.Watch(iter([inside]), timeout=5)
    assert next(stream).created
    stream.cancel()
    assert _code(lambda: lease.refresh()) == "OK" and _code(lambda: lease.revoke()) == "OK"
    # what no lab needs: each refused
    refused = {
        "user-add": lambda: auth.UserAdd(etcdrpc.AuthUserAddRequest(name="root", password="x")),
        "auth-enable": lambda: auth.AuthEnable(etcdrpc.AuthEnableRequest()),
        "compact": lambda: c.compact(1),
        "members": lambda: list(c.members),
        "put-outside": lambda: c.put("/side/flag", "1"),
        "read-everything": lambda: list(c.get_prefix("/")),
        "compare-outside": lambda: c.transaction(
            compare=[c.transactions.version("/side/flag") == 0],
            success=[c.transactions.put(PREFIX + "x", "2")], failure=[]),
        "failure-branch-outside": lambda: c.transaction(
            compare=[c.transactions.version(PREFIX + "x") == 0],
            success=[], failure=[c.transactions.put("/side/flag", "1")]),
    }  # fmt: skip
    got = {what: _code(call) for what, call in refused.items()}
    assert got == dict.fromkeys(refused, "PERMISSION_DENIED"), got
    # a watch outside the prefix: the stream ends refused, no event of the key ever comes
    create = etcdrpc.WatchRequest(create_request=etcdrpc.WatchCreateRequest(key=b"/side/flag"))
    stream = watch.Watch(iter([create]), timeout=5)
    assert _code(lambda: list(stream)) == "PERMISSION_DENIED"
    c.close()
    # etcd untouched: authentication off (a client without credentials still writes), nothing
    # outside the prefix, the history not compacted
    direct = etcd.client()
    try:
        direct.put("/chaos/after", "1")
        assert direct.get("/side/flag")[0] is None
        assert list(direct.get_prefix("/lab3/x"))  # written above, still readable at revision 1+
        direct.get(PREFIX + "counter", revision=2)  # raises if compacted
    finally:
        direct.close()
    lines = [e for e in _journal(state) if e.get("outcome") == "refused"]
    methods = [e["method"] for e in lines]
    assert methods.count("KV/Txn") == 2 and "Auth/AuthEnable" in methods
    assert {"Auth/UserAdd", "KV/Compact", "Cluster/MemberList", "KV/Put", "KV/Range",
            "Watch/Watch"} <= set(methods)  # fmt: skip
    assert len(lines) == len(refused) + 1
    assert all(e["reason"] and e["node"] == "n1" for e in lines)
    assert not any(e.get("puts") for e in lines)  # never taken for a write
