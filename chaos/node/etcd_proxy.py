"""The author journal: a root-owned gRPC proxy in front of a node's etcd member.

The lab services of a node reach etcd only through this proxy (``127.0.0.1:PORT`` of their own
node; a firewall rule keeps the service user off etcd's own ports, see
chaos.workloads.systems.etcd_proxy). It forwards every etcd call as raw bytes and writes one JSON
line per write it forwarded to a journal the service user can neither read nor write::

    {"node": "n2", "seq": 7, "method": "KV/Txn", "mono": ..., "wall": ...,
     "outcome": "ok" | "error" | "injected", "error": "UNAVAILABLE: ...",
     "revision": 41, "succeeded": true,
     "puts": [{"key": "/lab1/locks/reconciliation", "value": "{...}", "lease": 0}],
     "deletes": [{"key": "...", "range_end": "..."}],
     "other_branch": {"puts": [...], "deletes": [...]},     # only when the outcome is unknown
     "lease": 7587..., "ttl": 3}

``puts``/``deletes`` are what the executed branch of a transaction wrote (etcd answers which:
``succeeded``); ``revision`` is the response header's, the revision the write created. The node is
the proxy's own: every process that reaches this proxy runs on this node, so the journal names the
node whose service sent each write, whatever the service itself reports.

Scope: the proxy forwards only the calls a lab needs, on keys under the lab's prefix
(``--prefix``); every other call is refused with PERMISSION_DENIED before it reaches etcd and
journaled as ``"outcome": "refused"`` with the reason (chaos.node.etcd_scope).

Fault injection: a root-only control file ``<state>/control/txn-error`` (``{"gen": "...",
"keys": ["/lab3/results/", ...]}``) makes the proxy fail the next ``KV/Txn`` that would write a
key under one of ``keys`` with UNAVAILABLE (what a client sees when etcd is unreachable), without
forwarding it; it journals it as ``"outcome": "injected"`` with the arming's generation and
writes ``control/fired-<gen>``: the firing is the proxy's word, not the service's.

Write and read points (chaos.node.proxy_points): an armed ``write-point`` file in the same folder
makes the proxy hold the first call that writes (or reads) a key group, for a trigger whose
fault the code under test must not see coming.

Runs on the nodes, as root: standard library, ``grpc`` and ``etcd3``'s generated messages only.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from chaos.node import etcd_scope, proxy_points, write_effect
from chaos.node.proxy_points import HOLD_LIMIT, Held, Journal, WritePoints, announce

# methods that change nothing: forwarded, not journaled (everything else is journaled, so a
# method this list forgets is journaled too, never hidden)
READS = frozenset(
    {
        "etcdserverpb.KV/Range",
        "etcdserverpb.Watch/Watch",
        "etcdserverpb.Lease/LeaseTimeToLive",
    }
)
# how each streaming method streams; every other method is unary
STREAMS = {
    "etcdserverpb.Watch/Watch": "stream_stream",
    "etcdserverpb.Lease/LeaseKeepAlive": "stream_stream",
    "etcdserverpb.Maintenance/Snapshot": "unary_stream",
    "v3electionpb.Election/Observe": "unary_stream",
}
# a write's forwarded call gets this long, whatever the client's own deadline: a client that gave
# up does not stop the write in etcd, and the journal must still learn its revision
UPSTREAM_TIMEOUT = 30.0
MAX_VALUE = 4096
INJECT_FILE = "txn-error"
# a held read goes on this long before its client's deadline (see Forwarder._hold)
DEADLINE_MARGIN = 0.3


def _pb() -> Any:
    """etcd's generated messages, imported by the first call that decodes one, not at the start:
    they are a third of the proxy's imports, and the proxy starts on the node's one CPU beside
    its etcd member, while bring-up waits for both (the first write pays it, once)."""
    from etcd3 import etcdrpc

    return etcdrpc


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _value(raw: bytes) -> str | dict[str, int]:
    return _text(raw) if len(raw) <= MAX_VALUE else {"chaos_truncated_bytes": len(raw)}


def _ops(ops: Any, responses: Any | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The puts and deletes of a transaction branch; a nested transaction contributes its own
    executed branch (both branches when its answer is unknown)."""
    puts: list[dict[str, Any]] = []
    deletes: list[dict[str, Any]] = []
    for i, op in enumerate(ops):
        which = op.WhichOneof("request")
        if which == "request_put":
            p = op.request_put
            puts.append({"key": _text(p.key), "value": _value(p.value), "lease": int(p.lease)})
        elif which == "request_delete_range":
            d = op.request_delete_range
            deletes.append({"key": _text(d.key), "range_end": _text(d.range_end)})
        elif which == "request_txn":
            inner = op.request_txn
            sub = None
            if responses is not None and i < len(responses):
                sub = responses[i].response_txn
            branches = (
                [inner.success if sub.succeeded else inner.failure]
                if sub is not None
                else [inner.success, inner.failure]
            )
            for b in branches:
                p2, d2 = _ops(b, sub.responses if sub is not None else None)
                puts += p2
                deletes += d2
    return puts, deletes


def describe(method: str, request: bytes, response: bytes | None) -> dict[str, Any]:
    """What a write call did, from its raw request and (when it answered) raw response."""
    name = method.lstrip("/").removeprefix("etcdserverpb.")
    rec: dict[str, Any] = {"method": name}
    etcdrpc = _pb()
    if name == "KV/Txn":
        req = etcdrpc.TxnRequest.FromString(request)
        if response is None:
            puts, deletes = _ops(req.success, None)
            rec.update(puts=puts, deletes=deletes)
            p2, d2 = _ops(req.failure, None)
            rec["other_branch"] = {"puts": p2, "deletes": d2}
            return rec
        resp = etcdrpc.TxnResponse.FromString(response)
        branch = req.success if resp.succeeded else req.failure
        puts, deletes = _ops(branch, resp.responses)
        rec.update(succeeded=bool(resp.succeeded), revision=int(resp.header.revision))
        rec.update(puts=puts, deletes=deletes)
    elif name == "KV/Put":
        put = etcdrpc.PutRequest.FromString(request)
        rec["puts"] = [{"key": _text(put.key), "value": _value(put.value), "lease": int(put.lease)}]
        rec["deletes"] = []
        if response is not None:
            rec["revision"] = int(etcdrpc.PutResponse.FromString(response).header.revision)
    elif name == "KV/DeleteRange":
        dr = etcdrpc.DeleteRangeRequest.FromString(request)
        rec["puts"] = []
        rec["deletes"] = [{"key": _text(dr.key), "range_end": _text(dr.range_end)}]
        if response is not None:
            out = etcdrpc.DeleteRangeResponse.FromString(response)
            rec["revision"] = int(out.header.revision)
            rec["deleted"] = int(out.deleted)
    elif name == "KV/Compact":
        rec["compact_revision"] = int(etcdrpc.CompactionRequest.FromString(request).revision)
    elif name == "Lease/LeaseGrant":
        g = etcdrpc.LeaseGrantRequest.FromString(request)
        rec["ttl"] = int(g.TTL)
        if response is not None:
            gr = etcdrpc.LeaseGrantResponse.FromString(response)
            rec.update(lease=int(gr.ID), ttl=int(gr.TTL), revision=int(gr.header.revision))
    elif name == "Lease/LeaseRevoke":
        rec["lease"] = int(etcdrpc.LeaseRevokeRequest.FromString(request).ID)
        if response is not None:
            rv = etcdrpc.LeaseRevokeResponse.FromString(response)
            rec["revision"] = int(rv.header.revision)
    return rec


def _txn_keys(request: bytes) -> list[str]:
    req = _pb().TxnRequest.FromString(request)
    puts, deletes = _ops(req.success, None)
    p2, d2 = _ops(req.failure, None)
    return [x["key"] for x in (*puts, *deletes, *p2, *d2)]


class Injector:
    """The orchestrator's armed ``txn-error`` (a root-only file): fires once per generation, and
    says so in ``fired-<gen>`` beside it (root-only too) for the orchestrator to find."""

    def __init__(self, control: Path, node: str, claims: Path | None = None) -> None:
        self._control = control
        self._file = control / INJECT_FILE
        self._node = node
        # a root-only folder every node's proxy sees (the run's live folder): an arming for all
        # nodes is claimed there with O_EXCL, so exactly one proxy of the cluster fires it
        self._claims = claims
        self._fired: set[str] = set()
        self._lock = threading.Lock()

    def take(self, request: bytes) -> str | None:
        """The generation of an arming this Txn fires (once), or None."""
        try:
            spec = json.loads(self._file.read_text() or "{}")
        except (OSError, ValueError):
            return None
        if not isinstance(spec, dict):
            return None
        gen = str(spec.get("gen", ""))
        prefixes = [str(p) for p in spec.get("keys") or []]
        try:
            written = _txn_keys(request)
        except Exception:
            return None
        if prefixes and not any(k.startswith(p) for k in written for p in prefixes):
            return None
        with self._lock:
            if not gen or gen in self._fired or "/" in gen:
                return None
            self._fired.add(gen)
        note = json.dumps({"node": self._node, "gen": gen, "mono": time.monotonic(),
                           "wall": time.time(), "keys": written})  # fmt: skip
        if not announce(self._control, self._claims, gen, gen, note):
            return None  # another node's proxy fired this arming
        return gen


WRITES = frozenset({"etcdserverpb.KV/Txn", "etcdserverpb.KV/Put", "etcdserverpb.KV/DeleteRange"})


RANGE = "etcdserverpb.KV/Range"


def _request_keys(method: str, request: bytes) -> list[str]:
    """Every key a write request could write (both branches of a transaction); a read's key."""
    name = method.lstrip("/")
    if name == RANGE:
        return [_text(_pb().RangeRequest.FromString(request).key)]
    if name == "etcdserverpb.KV/Txn":
        return _txn_keys(request)
    if name == "etcdserverpb.KV/Put":
        return [_text(_pb().PutRequest.FromString(request).key)]
    return [_text(_pb().DeleteRangeRequest.FromString(request).key)]


def _answered_keys(method: str, request: bytes, response: bytes) -> list[str]:
    """The keys a write that etcd answered did write (the executed branch); a read's key."""
    if method.lstrip("/") == RANGE:
        return _request_keys(method, request)
    rec = describe(method, request, response)
    return [x["key"] for x in (*rec.get("puts", []), *rec.get("deletes", []))]


def _metadata(context: grpc.ServicerContext) -> list[tuple[str, str | bytes]]:
    return [
        (k, v)
        for k, v in context.invocation_metadata()
        if not k.startswith((":", "grpc-")) and k != "user-agent"
    ]


class Forwarder(grpc.GenericRpcHandler):
    """Every method, forwarded as bytes to the local member; writes journaled."""

    def __init__(
        self,
        upstream: grpc.Channel,
        journal: Journal,
        injector: Injector,
        prefix: bytes | None = None,
        points: WritePoints | None = None,
    ) -> None:
        self._up = upstream
        self._journal = journal
        self._inject = injector
        self._prefix = prefix
        self._points = points
        self._read = write_effect.member_read(upstream.unary_unary("/" + RANGE))

    def _hold(
        self,
        moment: str,
        method: str,
        keys: Callable[[], list[str]],
        peer: str,
        deadline: Callable[[], float | None] = lambda: None,
        changes: Callable[[Sequence[str]], bool] | None = None,
    ) -> dict[str, Any] | None:
        """Hold this call at an armed write or read point (chaos.node.proxy_points): the
        release's words with ``first`` (this call fired it), or None when not held here."""
        name = method.lstrip("/")
        if self._points is None or (name not in WRITES and name != RANGE):
            return None
        op = "read" if name == RANGE else "write"
        try:
            held: Held | None = self._points.take(op, moment, keys, peer, changes)
        except Exception:  # a request etcd refuses anyway: no point of ours
            return None
        if held is None:
            return None
        limit = HOLD_LIMIT
        remaining = deadline()
        if op == "read" and remaining is not None:
            # a read held past the client's own deadline would reach it as a timeout, not as
            # the stale answer the point is for: it goes on just before, whatever is awaited
            limit = max(0.0, min(limit, remaining - DEADLINE_MARGIN))
        return {"gen": held.gen, "first": held.first, **self._points.wait(held, limit)}

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = str(details.method)
        name = method.lstrip("/")
        kind = STREAMS.get(name, "unary_unary")
        if name not in etcd_scope.ALLOWED:
            return self._refusing(method, kind)
        if kind == "stream_stream":
            return grpc.stream_stream_rpc_method_handler(self._stream_stream(method))
        if kind == "unary_stream":
            return grpc.unary_stream_rpc_method_handler(self._unary_stream(method))
        return grpc.unary_unary_rpc_method_handler(self._unary(method, journaled=name not in READS))

    def _refuse(self, method: str, why: str, context: grpc.ServicerContext) -> None:
        self._journal.write({"method": method.lstrip("/").removeprefix("etcdserverpb."),
                             "outcome": etcd_scope.REFUSED, "reason": why,
                             "mono": time.monotonic(), "wall": time.time()})  # fmt: skip
        context.abort(grpc.StatusCode.PERMISSION_DENIED, f"refused by chaos: {why}")

    def _refusing(self, method: str, kind: str) -> grpc.RpcMethodHandler:
        """A call no lab may make: journaled and refused, whatever it carries."""
        why = etcd_scope.refusal(method.lstrip("/"), b"", self._prefix) or "refused"

        def unary(request: Any, context: grpc.ServicerContext) -> bytes:
            self._refuse(method, why, context)
            return b""

        def streaming(request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
            self._refuse(method, why, context)
            yield b""

        if kind == "stream_stream":
            return grpc.stream_stream_rpc_method_handler(streaming)
        if kind == "unary_stream":
            return grpc.unary_stream_rpc_method_handler(streaming)
        return grpc.unary_unary_rpc_method_handler(unary)

    def _record(self, method: str, request: bytes, response: bytes | None, **extra: Any) -> None:
        try:
            rec = describe(method, request, response)
        except Exception as e:  # a request etcd would refuse too: say so, never drop the line
            rec = {"method": method.lstrip("/"), "undecodable": f"{type(e).__name__}: {e}"}
        self._journal.write({**rec, "mono": time.monotonic(), "wall": time.time(), **extra})

    def _unary(self, method: str, *, journaled: bool) -> Callable[[bytes, Any], bytes]:
        call = self._up.unary_unary(method)
        is_txn = method.lstrip("/") == "etcdserverpb.KV/Txn"

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            why = etcd_scope.refusal(method.lstrip("/"), request, self._prefix)
            if why is not None:
                self._refuse(method, why, context)
            if is_txn and (gen := self._inject.take(request)) is not None:
                self._record(method, request, None, outcome="injected", gen=gen)
                context.abort(grpc.StatusCode.UNAVAILABLE, "injected: etcd unavailable")
            peer = context.peer()
            left = context.time_remaining
            before = self._hold(
                "before", method, lambda: _request_keys(method, request), peer, left,
                lambda ps: write_effect.would_change(method, request, ps, self._read),
            )  # fmt: skip
            if (
                before is not None
                and before.get("forward") is False
                and (before["first"] or not context.is_active())
            ):
                # the process that sent it was killed while it was held: it never left (a call
                # held beside the firing one is dropped only when its own sender is gone)
                self._record(method, request, None, outcome="dropped", gen=before["gen"])
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection lost")
            remaining = context.time_remaining()
            timeout = UPSTREAM_TIMEOUT if journaled else remaining
            try:
                response = call(request, timeout=timeout, metadata=_metadata(context))
            except grpc.RpcError as e:
                code = e.code() if isinstance(e, grpc.Call) else grpc.StatusCode.UNKNOWN
                details = e.details() if isinstance(e, grpc.Call) else str(e)
                if journaled:
                    self._record(method, request, None, outcome="error",
                                 error=f"{code.name}: {details}")  # fmt: skip
                context.abort(code, details or "")
            if journaled:
                self._record(method, request, response, outcome="ok")
            self._hold(
                "after", method, lambda: _answered_keys(method, request, response), peer, left,
                lambda ps: write_effect.did_change(method, request, response, ps, self._read),
            )  # fmt: skip
            return bytes(response)

        return handle

    def _unary_stream(self, method: str) -> Callable[[bytes, Any], Iterator[bytes]]:
        call = self._up.unary_stream(method)

        def handle(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
            if method.lstrip("/") not in READS:
                self._record(method, request, None, outcome="forwarded")
            responses = call(request, metadata=_metadata(context))
            context.add_callback(responses.cancel)
            try:
                yield from responses
            except grpc.RpcError as e:
                if isinstance(e, grpc.Call) and e.code() is not grpc.StatusCode.CANCELLED:
                    context.abort(e.code(), e.details() or "")

        return handle

    def _stream_stream(self, method: str) -> Callable[[Iterator[bytes], Any], Iterator[bytes]]:
        call = self._up.stream_stream(method)
        keepalive = method.lstrip("/") == "etcdserverpb.Lease/LeaseKeepAlive"
        watch = method.lstrip("/") == "etcdserverpb.Watch/Watch"

        def handle(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
            refused: list[str] = []
            ups: list[Any] = []

            def checked() -> Iterator[bytes]:
                # a watch outside the prefix ends the whole stream, refused, before etcd sees it
                for request in requests:
                    why = etcd_scope.watch_refusal(request, self._prefix) if watch else None
                    if why is not None:
                        refused.append(why)
                        for up in ups:
                            up.cancel()
                        return
                    yield request

            responses = call(checked(), metadata=_metadata(context))
            ups.append(responses)
            if refused:  # refused before the call was there to cancel
                responses.cancel()
            context.add_callback(responses.cancel)
            try:
                for response in responses:
                    if keepalive:
                        ka = _pb().LeaseKeepAliveResponse.FromString(response)
                        self._journal.write({"method": "Lease/LeaseKeepAlive", "outcome": "ok",
                                             "lease": int(ka.ID), "ttl": int(ka.TTL),
                                             "revision": int(ka.header.revision),
                                             "mono": time.monotonic(), "wall": time.time()})  # fmt: skip
                    yield response
            except grpc.RpcError as e:
                if refused:
                    self._refuse(method, refused[0], context)
                if isinstance(e, grpc.Call) and e.code() is not grpc.StatusCode.CANCELLED:
                    context.abort(e.code(), e.details() or "")
            if refused:
                self._refuse(method, refused[0], context)

        return handle


def serve(
    listen: str, upstream: str, node: str, state: Path, claims: Path | None, prefix: str | None
) -> None:
    control = state / "control"
    control.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    os.chmod(control, 0o700)
    journal = Journal(state / "journal.jsonl", node)
    unlimited = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    channel = grpc.insecure_channel(upstream, options=unlimited)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=256, thread_name_prefix="fwd"), options=unlimited
    )
    scope = prefix.encode() if prefix else None
    forwarder = Forwarder(
        channel,
        journal,
        Injector(control, node, claims),
        scope,
        WritePoints(control, node, claims),
    )
    server.add_generic_rpc_handlers((forwarder,))
    if server.add_insecure_port(listen) == 0:
        raise SystemExit(f"etcd proxy: cannot listen on {listen}")
    server.start()
    print(f"etcd proxy for {node}: {listen} -> {upstream}, journal in {state}", flush=True)
    server.wait_for_termination()


def main() -> None:
    p = proxy_points.arguments("chaos.node.etcd_proxy")
    p.add_argument("--prefix", default=None, help="the lab's keys: every other key is refused")
    a = p.parse_args()
    os.umask(0o077)
    serve(a.listen, a.upstream, a.node, a.state, a.claims, a.prefix)


if __name__ == "__main__":
    main()
