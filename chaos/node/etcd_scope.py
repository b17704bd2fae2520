"""What a lab service may ask of etcd through its node's proxy (chaos.node.etcd_proxy).

A lab needs the keys of its own prefix and leases: KV range, put, delete range and txn, watch,
and lease grant, keep-alive, revoke and time-to-live. Anything else the service could send —
``Auth/*`` (``AuthEnable`` locks chaos out of etcd), ``Maintenance/*``, ``Cluster/*``, compaction
(erases the record a verdict is replayed from), keys outside the prefix (a side channel between
replicas that no checker reads) — is refused by the proxy before it reaches etcd, and the refusal
is journaled: the checkers name it (chaos.checkers.etcd_scope).

A range is inside the prefix when its start key starts with it and its end (when it has one) is
no later than the prefix's own end: etcd's ``[key, range_end)``, compared as bytes the way etcd
compares keys. ``range_end`` ``\\0`` ("every key from ``key`` on") is outside any prefix.

Runs on the nodes, as root: standard library and ``etcd3``'s generated messages only.
"""

from __future__ import annotations

from typing import Any

KV = "etcdserverpb.KV/"
LEASE = "etcdserverpb.Lease/"
# the methods a lab's service may call; every other one is refused (a method this list forgets
# is refused, never forwarded)
ALLOWED = frozenset(
    {
        KV + "Range",
        KV + "Put",
        KV + "DeleteRange",
        KV + "Txn",
        "etcdserverpb.Watch/Watch",
        LEASE + "LeaseGrant",
        LEASE + "LeaseKeepAlive",
        LEASE + "LeaseRevoke",
        LEASE + "LeaseTimeToLive",
    }
)
REFUSED = "refused"


def _pb() -> Any:
    from etcd3 import etcdrpc

    return etcdrpc


def prefix_end(prefix: bytes) -> bytes:
    """The first key after every key that starts with ``prefix`` (etcd's ``get_prefix`` end)."""
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] < 0xFF:
            return prefix[:i] + bytes([prefix[i] + 1])
    return b"\0"


def _show(raw: bytes) -> str:
    text = raw[:80].decode("utf-8", errors="replace")
    return text + ("…" if len(raw) > 80 else "")


def range_refusal(key: bytes, range_end: bytes, prefix: bytes) -> str | None:
    """Why ``[key, range_end)`` (a single key when ``range_end`` is empty) is not inside
    ``prefix``, or None when it is."""
    if not key.startswith(prefix):
        return f"key {_show(key)!r} is outside the lab's prefix {_show(prefix)!r}"
    if not range_end:
        return None
    if range_end == b"\0" or range_end > prefix_end(prefix):
        return (
            f"the range from {_show(key)!r} to {_show(range_end)!r} reaches past the lab's "
            f"prefix {_show(prefix)!r}"
        )
    return None


def _ops_refusal(ops: Any, prefix: bytes) -> str | None:
    for op in ops:
        which = op.WhichOneof("request")
        if which == "request_txn":
            why = txn_refusal(op.request_txn, prefix)
        elif which == "request_put":
            why = range_refusal(op.request_put.key, b"", prefix)
        elif which in ("request_range", "request_delete_range"):
            r = getattr(op, which)
            why = range_refusal(r.key, r.range_end, prefix)
        else:
            why = f"an operation etcd's proxy does not know ({which})"
        if why:
            return why
    return None


def txn_refusal(txn: Any, prefix: bytes) -> str | None:
    """A transaction: every compare's key and range, and every operation of both branches
    (nested transactions included)."""
    for c in txn.compare:
        if why := range_refusal(c.key, c.range_end, prefix):
            return f"a compare: {why}"
    return _ops_refusal(txn.success, prefix) or _ops_refusal(txn.failure, prefix)


def refusal(method: str, request: bytes, prefix: bytes | None) -> str | None:
    """Why the proxy refuses this unary call (``method`` as gRPC names it, without the leading
    slash), or None when it forwards it. ``prefix`` None: any key (no lab's services use this
    proxy)."""
    if method not in ALLOWED:
        return f"{method} is not a call a lab's service may make"
    if prefix is None or not method.startswith(KV):
        return None
    pb = _pb()
    try:
        if method == KV + "Txn":
            return txn_refusal(pb.TxnRequest.FromString(request), prefix)
        if method == KV + "Put":
            return range_refusal(pb.PutRequest.FromString(request).key, b"", prefix)
        kind = pb.RangeRequest if method == KV + "Range" else pb.DeleteRangeRequest
        r = kind.FromString(request)
        return range_refusal(r.key, r.range_end, prefix)
    except Exception as e:  # a request etcd would refuse too
        return f"an undecodable {method} ({type(e).__name__})"


def watch_refusal(request: bytes, prefix: bytes | None) -> str | None:
    """One request of a watch stream: a watch it creates must stay inside the prefix."""
    if prefix is None:
        return None
    try:
        req = _pb().WatchRequest.FromString(request)
    except Exception as e:
        return f"an undecodable watch request ({type(e).__name__})"
    if req.WhichOneof("request_union") != "create_request":
        return None
    c = req.create_request
    why = range_refusal(c.key, c.range_end, prefix)
    return f"a watch: {why}" if why else None
