"""Whether a write changes a key group: the test a write point fires on (chaos.node.proxy_points).

Why: a point that fired on any write of a group could be aimed by the code under test. A thread
that rewrites the counter with the value it holds, or sends a transaction whose compare always
fails, writes the group as far as the keys go and changes nothing — no checker names such a
write — yet it would take the firing, at a moment the code under test chose, away from the write
the point is for. So a write point fires only on a write that changes what the group holds:

- ``before``: the branch etcd would execute *now* (the proxy evaluates the compares on its own
  read of the member, as etcd does) puts a value that differs from the key's present one, or
  deletes a key that is there;
- ``after``: the executed branch (etcd's answer says which) put a value that differs from the
  key's value just before the write (a read at the answer's revision minus one), or deleted a key.

Values are compared as the checkers read them: canonical JSON where the bytes are JSON (fields
reordered is no change), the bytes otherwise (`` 5`` is not ``5``: the record reads it as text).
Where the proxy cannot tell (a read fails, a request it cannot decode), the write counts as a
change: the point fires as it did before this test existed, never less often for a real write.

Runs on the nodes, as root: standard library and etcd3's generated messages only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# values longer than this compare as bytes (the record keeps no longer ones either)
CANONICAL_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Kv:
    """One key as etcd holds it, for the compares and the comparison of values."""

    key: bytes
    value: bytes
    version: int
    create_revision: int
    mod_revision: int
    lease: int


# read(key, range_end, revision) -> the keys in [key, range_end) (range_end b"": the key alone)
# at ``revision`` (0: now); raises when the member does not answer
Read = Callable[[bytes, bytes, int], Sequence[Kv]]


def canonical(raw: bytes) -> bytes:
    """The value as the checkers compare it: canonical JSON when it is JSON, else its bytes."""
    if len(raw) > CANONICAL_LIMIT:
        return raw
    try:
        value = json.loads(raw)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return raw  # a number compares as written: `` 5`` stays text for the record
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):
        return raw


def _under(key: bytes, prefixes: Sequence[bytes]) -> bool:
    return any(key.startswith(p) for p in prefixes)


def _compare(c: Any, kv: Kv | None) -> bool:
    """One etcd ``Compare`` against a key (None: absent), as the member evaluates it."""
    pb = _pb()
    target = c.target
    if kv is None:
        if target == pb.Compare.VALUE:
            return False  # etcd: a value compare on a missing key always fails
        kv = Kv(c.key, b"", 0, 0, 0, 0)
    if target == pb.Compare.VALUE:
        a: Any = kv.value
        b: Any = c.value
    elif target == pb.Compare.VERSION:
        a, b = kv.version, c.version
    elif target == pb.Compare.CREATE:
        a, b = kv.create_revision, c.create_revision
    elif target == pb.Compare.MOD:
        a, b = kv.mod_revision, c.mod_revision
    elif target == pb.Compare.LEASE:
        a, b = kv.lease, c.lease
    else:
        raise ValueError(f"compare target {target}")
    order = (a > b) - (a < b)
    result = c.result
    if result == pb.Compare.EQUAL:
        return order == 0
    if result == pb.Compare.NOT_EQUAL:
        return order != 0
    if result == pb.Compare.GREATER:
        return order > 0
    if result == pb.Compare.LESS:
        return order < 0
    raise ValueError(f"compare result {result}")


def _holds(compares: Sequence[Any], read: Read) -> bool:
    for c in compares:
        kvs = read(c.key, c.range_end, 0)
        if not kvs:
            if not _compare(c, None):
                return False
        elif not all(_compare(c, kv) for kv in kvs):
            return False
    return True


def _branch_changes(ops: Sequence[Any], prefixes: Sequence[bytes], read: Read, rev: int) -> bool:
    """True when a branch's puts or deletes under ``prefixes`` change what is there at ``rev``
    (0: now); a nested transaction is evaluated now, its branch taken as etcd would."""
    for op in ops:
        which = op.WhichOneof("request")
        if which == "request_put":
            p = op.request_put
            if _under(p.key, prefixes):
                now = read(p.key, b"", rev)
                if not now or canonical(now[0].value) != canonical(p.value):
                    return True
        elif which == "request_delete_range":
            d = op.request_delete_range
            if _under(d.key, prefixes) and read(d.key, d.range_end, rev):
                return True
        elif which == "request_txn":
            inner = op.request_txn
            branch = inner.success if _holds(inner.compare, read) else inner.failure
            if _branch_changes(branch, prefixes, read, rev):
                return True
    return False


def would_change(method: str, request: bytes, prefixes: Sequence[str], read: Read) -> bool:
    """Whether a write call, executed now, would change a key under ``prefixes``."""
    pb = _pb()
    ps = [p.encode() for p in prefixes]
    try:
        name = method.lstrip("/").removeprefix("etcdserverpb.")
        if name == "KV/Txn":
            req = pb.TxnRequest.FromString(request)
            branch = req.success if _holds(req.compare, read) else req.failure
            return _branch_changes(branch, ps, read, 0)
        op = _op(pb, name, request)
        return op is None or _branch_changes([op], ps, read, 0)
    except Exception:  # undecidable: counts as a change, the point fires as it always did
        return True


def did_change(
    method: str, request: bytes, response: bytes, prefixes: Sequence[str], read: Read
) -> bool:
    """Whether a write call etcd answered changed a key under ``prefixes``: its executed branch
    against the values at the revision before it."""
    pb = _pb()
    ps = [p.encode() for p in prefixes]
    try:
        name = method.lstrip("/").removeprefix("etcdserverpb.")
        if name == "KV/Txn":
            req = pb.TxnRequest.FromString(request)
            resp = pb.TxnResponse.FromString(response)
            before = int(resp.header.revision) - 1
            branch = req.success if resp.succeeded else req.failure
            return _executed_changes(branch, resp.responses, ps, read, before)
        op = _op(pb, name, request)
        if op is None:
            return True
        if name == "KV/DeleteRange":
            deleted = int(pb.DeleteRangeResponse.FromString(response).deleted)
            return deleted > 0 and _under(op.request_delete_range.key, ps)
        before = int(pb.PutResponse.FromString(response).header.revision) - 1
        return _branch_changes([op], ps, read, before)
    except Exception:
        return True


def _executed_changes(
    ops: Sequence[Any], responses: Sequence[Any], ps: Sequence[bytes], read: Read, before: int
) -> bool:
    for i, op in enumerate(ops):
        which = op.WhichOneof("request")
        answer = responses[i] if i < len(responses) else None
        if which == "request_delete_range":
            d = op.request_delete_range
            deleted = answer.response_delete_range.deleted if answer is not None else 1
            if _under(d.key, ps) and deleted > 0:
                return True
        elif which == "request_txn" and answer is not None:
            inner, sub = op.request_txn, answer.response_txn
            branch = inner.success if sub.succeeded else inner.failure
            if _executed_changes(branch, sub.responses, ps, read, before):
                return True
        elif which in ("request_put", "request_txn") and _branch_changes([op], ps, read, before):
            return True
    return False


def _op(pb: Any, name: str, request: bytes) -> Any | None:
    """A Put or DeleteRange call as a transaction's request op; None for another method."""
    if name == "KV/Put":
        return pb.RequestOp(request_put=pb.PutRequest.FromString(request))
    if name == "KV/DeleteRange":
        return pb.RequestOp(request_delete_range=pb.DeleteRangeRequest.FromString(request))
    return None


def member_read(unary: Callable[..., Any]) -> Read:
    """A :data:`Read` through the proxy's own channel to its member (``unary``: the channel's
    ``KV/Range`` callable, raw bytes in and out)."""

    def read(key: bytes, range_end: bytes, revision: int) -> Sequence[Kv]:
        pb = _pb()
        req = pb.RangeRequest(key=key, range_end=range_end, revision=max(0, revision))
        resp = pb.RangeResponse.FromString(unary(req.SerializeToString(), timeout=2.0))
        return [
            Kv(kv.key, kv.value, kv.version, kv.create_revision, kv.mod_revision, kv.lease)
            for kv in resp.kvs
        ]

    return read


def _pb() -> Any:
    from etcd3 import etcdrpc

    return etcdrpc
