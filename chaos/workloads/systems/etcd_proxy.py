"""Each node's author journal: a root-owned etcd proxy, the firewall that makes it the only way
in, and the journal's collection (the proxy itself is chaos.node.etcd_proxy).

Why: a checker must know which node wrote each revision, and the services' own reports (``txn``
events) are the code under test's word. So the lab services of a node get only
``127.0.0.1:PORT`` — their node's proxy, which listens on loopback only, so no other node's
service can reach it — and an OUTPUT rule in the node's network namespace rejects every TCP
connection of any process but root's (the services run as uids of their own) to etcd's client and
peer ports on any address. The proxy and etcd run as the node's root, which the rule does not touch; the orchestrator reaches
etcd from the host, outside the namespace. The rule lives in ``OUTPUT`` itself, not in the run's
partition chain, so no heal ever flushes it; it is installed before any service starts and goes
with the node.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chaos.cluster.base import Cluster, ExecResult, SharedLive
from chaos.core.context import RunContext
from chaos.core.supervisor import ProcessSpec
from chaos.histories.files import read_regular
from chaos.histories.limits import loads_bounded

PORT = 2479


# in the node's log folder, root's (mode 755, this folder 0700): the Docker backend's is a volume
# of the run, which the engine's archive API reaches (a container's own tmpfs mounts, /data among
# them, it does not); a backend that maps node paths into the run's folder (SSH) maps it too
def state_files(state: str) -> tuple[str, str]:
    """A root-owned proxy's control folder and journal, in its state folder (root's, 0700)."""
    return f"{state}/control", f"{state}/journal.jsonl"


STATE = "/var/log/chaos/etcd-proxy"
CONTROL, JOURNAL = state_files(STATE)
NAME = "etcd-proxy"
# only root's processes (etcd, the proxy) reach etcd's ports: the services run as uids of their
# run, node and service (chaos.cluster.docker.cluster.service_uid), so the rule names root, not them
ROOT_UID = 0
ETCD_PORTS = (2379, 2380)
# a journal past this is cut when collected (and says so; the node's journal is then unread):
# the kept lines are held and stored in final.json, and a solution writing 3 KB values made
# 32 MiB of them on one node (a lab run's journal is a few hundred KB)
MAX_JOURNAL = 16 << 20


class GuardError(RuntimeError):
    """The firewall rule that keeps the service user off etcd could not be installed."""


def service_endpoint() -> str:
    """What a node's lab services get as ``CHAOS_ETCD``: their own node's proxy, and only it."""
    return f"127.0.0.1:{PORT}"


CLAIMS = "proxy-claims"  # in the run's live folder: root's, 0700


def claims_folder(ctx: RunContext) -> str | None:
    """Where the nodes' proxies see the shared claims folder, when the nodes share the live one."""
    if isinstance(ctx.cluster, SharedLive) and confined(ctx.cluster):
        return f"{ctx.cluster.live_path()}/{CLAIMS}"
    return None


def process(
    ctx: RunContext, node: str, upstream_port: int, scope: str | None = None
) -> ProcessSpec:
    """The proxy of ``node``; ``scope``: the lab's key prefix, the only keys it forwards."""
    extra = ["--prefix", scope] if scope else []
    upstream = f"127.0.0.1:{upstream_port}"
    return proxy_process(ctx, node, NAME, service_endpoint(), upstream, STATE, extra)


def proxy_process(
    ctx: RunContext,
    node: str,
    name: str,
    listen: str,
    upstream: str,
    state: str,
    extra: list[str],
) -> ProcessSpec:
    """A root-owned proxy of ``node`` (``chaos.node.<name with _>``, its command line
    chaos.node.proxy_points.arguments), the claims folder passed where the nodes share one."""
    claims = claims_folder(ctx)
    return ProcessSpec(
        node=node,
        name=name,
        role=name,
        infrastructure=True,
        argv=[
            "python3", "-m", f"chaos.node.{name.replace('-', '_')}",
            "--listen", listen,
            "--upstream", upstream,
            "--node", node,
            "--state", state,
            *(["--claims", claims] if claims else []),
            *extra,
        ],
    )  # fmt: skip


def guard_rule(ports: Sequence[int] = ETCD_PORTS) -> list[str]:
    """The OUTPUT rule (after ``-I OUTPUT 1``/``-C OUTPUT``) that rejects the TCP connections of
    every process but root's to ``ports`` (etcd's) on every address."""
    return [
        "-p", "tcp", "-m", "owner", "!", "--uid-owner", str(ROOT_UID),
        "-m", "multiport", "--dports", ",".join(str(p) for p in ports),
        "-j", "REJECT", "--reject-with", "tcp-reset",
    ]  # fmt: skip


def _guard_one(cluster: Cluster, node: str, ports: Sequence[int]) -> None:
    # one command per node (a shell in the node's namespace, the host's tools): bring-up pays
    # for process starts, not for rules
    rule = " ".join(guard_rule(ports))
    script = (
        f"iptables -w 5 -C OUTPUT {rule} 2>/dev/null || iptables -w 5 -I OUTPUT 1 {rule} || exit 1; "
        f"ip6tables -w 5 -C OUTPUT {rule} 2>/dev/null || ip6tables -w 5 -I OUTPUT 1 {rule} "
        '|| [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)" = 1 ] || exit 2'
    )
    r: ExecResult = cluster.net_exec(node, ["sh", "-c", script])
    if not r.ok:
        tool = "ip6tables" if r.exit_code == 2 else "iptables"
        raise GuardError(f"{node}: {tool} -I OUTPUT 1 {rule}: {r.output.strip()}")


def confined(cluster: Cluster) -> bool:
    """Whether the nodes are the orchestrator's own containers (they share its live folder):
    there the services run as the service user, the rule can tell them from the proxy, and it
    goes with the node. On machines the instructor provides (SSH) the services run as the SSH
    user, like the proxy, and a rule would outlive the run: none is installed, and the journal
    is only as trustworthy as the machine (docs/security.md, "What is not confined")."""
    return isinstance(cluster, SharedLive)


def install_guard(cluster: Cluster, ports: Sequence[int] = ETCD_PORTS) -> None:
    """Reject the service user's connections to ``ports`` (etcd's; the NATS proxy's guard: the
    broker's) in every node (idempotent); nothing on nodes that are not ``confined``."""
    if not confined(cluster):
        return
    with ThreadPoolExecutor(max_workers=len(cluster.nodes) or 1) as pool:
        for f in [pool.submit(_guard_one, cluster, n, tuple(ports)) for n in cluster.nodes]:
            f.result()


def wait_listening(
    cluster: Cluster, wait: float = 20.0, port: int = PORT, name: str = NAME
) -> None:
    """Wait until every node's proxy (``name``, on ``port``) listens: its socket in the node's
    /proc/net/tcp, read from inside the node's network namespace (it listens on loopback only)."""
    # 127.0.0.1:port listening, as /proc/net/tcp spells it (address and port in hex, state 0A)
    listening = f"0100007F:{port:04X} 00000000:0000 0A"

    def one(node: str) -> None:
        deadline = time.monotonic() + wait
        while True:
            r = cluster.net_exec(node, ["cat", "/proc/net/tcp"])
            if r.ok and listening in r.output:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {name} on {node} did not listen within {wait:g} s; "
                                   f"see logs/{node}/{name}.log")  # fmt: skip
            time.sleep(0.05)

    with ThreadPoolExecutor(max_workers=len(cluster.nodes) or 1) as pool:
        for f in [pool.submit(one, n) for n in cluster.nodes]:
            f.result()


def prepare(ctx: RunContext) -> None:
    """What the proxies need before they start: the root-only claims folder in the live one."""
    if claims_folder(ctx) is not None:
        (ctx.live / CLAIMS).mkdir(mode=0o700, exist_ok=True)
        os.chmod(ctx.live / CLAIMS, 0o700)  # the service user must not see or pre-empt a claim


def _each(cluster: Cluster, fn: Any) -> list[Any]:
    with ThreadPoolExecutor(max_workers=len(cluster.nodes) or 1) as pool:
        return list(pool.map(fn, cluster.nodes))


def arm_txn_error(ctx: RunContext, prefixes: list[str]) -> str:
    """Make the nodes' proxies fail the next transaction that writes a key under ``prefixes``:
    once in the cluster where the nodes share the live folder (the first proxy to claim the
    arming there), else once per node until ``disarm_txn_error``; returns the generation."""
    gen = secrets.token_hex(8)
    data = json.dumps({"gen": gen, "keys": prefixes}).encode()
    _each(ctx.cluster, lambda n: ctx.cluster.put_file(n, f"{CONTROL}/txn-error", data))
    return gen


WRITE_POINT = "write-point"  # chaos.node.proxy_points.ARM_FILE


def arm_write_point(
    ctx: RunContext,
    op: str,
    moment: str,
    prefixes: list[str],
    hold: float | None = None,
    control: str = CONTROL,
    then: int = 0,
    during: dict[str, object] | None = None,
) -> str:
    """Arm every node's proxy to hold the first ``op`` (``write``/``read``) ``before``/``after``
    it reaches a key under ``prefixes`` (chaos.node.proxy_points), and let it go on by itself
    ``hold`` seconds after it held it (None: only at the orchestrator's release); returns the
    generation. ``control``: the proxy's control folder (the NATS proxy's takes the broker's ops
    the same way, chaos.workloads.systems.nats_proxy). ``during``: fire only while the node has
    a delivery in flight (chaos.node.deliveries.as_spec)."""
    gen = secrets.token_hex(8)
    spec: dict[str, Any] = {"gen": gen, "op": op, "moment": moment, "keys": prefixes}
    if hold is not None:
        spec["hold"] = hold
    if then > 0:
        spec["then"] = then  # later firings, chained (chaos.core.capabilities.chained)
    if during is not None:
        spec["during"] = during
    data = json.dumps(spec).encode()
    _each(ctx.cluster, lambda n: ctx.cluster.put_file(n, f"{control}/{WRITE_POINT}", data))
    return gen


def disarm_write_point(ctx: RunContext, control: str = CONTROL) -> None:
    _each(ctx.cluster, lambda n: ctx.cluster.put_file(n, f"{control}/{WRITE_POINT}", b"{}"))


def release_write_point(
    ctx: RunContext, node: str, gen: str, *, forward: bool, control: str = CONTROL
) -> None:
    """Let the write held for arming ``gen`` on ``node`` go on (``forward``), or drop it (its
    sender was killed while it was held)."""
    data = json.dumps({"gen": gen, "forward": forward}).encode()
    ctx.cluster.put_file(node, f"{control}/release-{gen}", data)


def write_point_fired(ctx: RunContext, gen: str, control: str = CONTROL) -> dict[str, Any] | None:
    """Where arming ``gen`` fired, in the proxy's own note (``node``, ``time``, ``port``: the
    sender's TCP port, ``keys``), or None until it fires."""
    raws: list[tuple[str | None, bytes | None]]
    if claims_folder(ctx) is not None:
        try:
            raws = [(None, read_regular(ctx.live / CLAIMS / f"write-{gen}", 1 << 16))]
        except OSError:
            return None
    else:
        got = _each(ctx.cluster, lambda n: ctx.cluster.get_file(n, f"{control}/fired-{gen}"))
        raws = list(zip(ctx.cluster.nodes, got, strict=True))
    for node, raw in raws:
        if raw is None:
            continue
        note = _note(ctx, raw, gen)
        if note is None or (node is not None and note["node"] != node):
            continue
        try:
            extra = json.loads(raw)
        except ValueError:
            continue
        port, moment = extra.get("port"), extra.get("moment")
        note["port"] = port if isinstance(port, int) else None
        note["moment"] = moment if moment in ("before", "after") else None
        delivery = extra.get("delivery")
        if isinstance(delivery, str):  # a gated point: the delivery in flight at the call
            note["delivery"] = delivery[:256]
        return note
    return None


def disarm_txn_error(ctx: RunContext) -> None:
    _each(ctx.cluster, lambda n: ctx.cluster.put_file(n, f"{CONTROL}/txn-error", b"{}"))


def txn_error_fired(ctx: RunContext, gen: str) -> list[dict[str, Any]]:
    """Where an arming fired: the proxy's own note (node, run time, the keys of the transaction
    it failed), from the shared claims folder or each node's root-only control folder."""
    if claims_folder(ctx) is not None:
        try:
            raws = [read_regular(ctx.live / CLAIMS / gen, 1 << 16)]
        except OSError:
            return []
        return [n for n in (_note(ctx, r, gen) for r in raws) if n is not None]
    out = []
    for node, raw in zip(
        ctx.cluster.nodes,
        _each(ctx.cluster, lambda n: ctx.cluster.get_file(n, f"{CONTROL}/fired-{gen}")),
        strict=True,
    ):
        note = _note(ctx, raw, gen) if raw is not None else None
        if note is not None and note["node"] == node:
            out.append(note)
    return out


def _note(ctx: RunContext, raw: bytes, gen: str) -> dict[str, Any] | None:
    try:
        note = loads_bounded(raw)
    except ValueError:  # not JSON, or nested too deep (TooDeep)
        return None
    if (
        not isinstance(note, dict)
        or note.get("gen") != gen
        or not isinstance(note.get("node"), str)
    ):
        return None
    mono = note.get("mono")
    at = round(float(mono) - ctx.origin, 3) if isinstance(mono, int | float) else None
    keys = note.get("keys")
    return {"node": note["node"], "time": at, "keys": keys if isinstance(keys, list) else []}


def collect(ctx: RunContext, journal: str = JOURNAL, source: str = NAME) -> dict[str, Any]:
    """Every node's journal, as ``{"source": "etcd-proxy", "entries": [...], "problems": [...],
    "nodes": {node: count}, "unread": {node: why}}``: entries in each node's order; what could
    not be read is named in ``problems`` (in words), and each node whose journal, or part of it,
    was not read in ``unread`` — what a checker decides "who wrote it cannot be told" by.
    ``journal``/``source``: another proxy's (the NATS proxy's, chaos.workloads.systems.nats_proxy)."""
    out: dict[str, Any] = {"source": source, "entries": [], "problems": [], "nodes": {},
                           "unread": {}}  # fmt: skip

    def one(node: str) -> tuple[str, bytes | None, str | None]:
        try:
            return node, ctx.cluster.get_file(node, journal), None
        except Exception as e:  # a node gone: said below
            return node, None, f"{type(e).__name__}: {e}"

    with ThreadPoolExecutor(max_workers=len(ctx.cluster.nodes) or 1) as pool:
        got = list(pool.map(one, ctx.cluster.nodes))
    for node, raw, error in got:
        if raw is None:
            if error is not None:
                out["problems"].append(f"{node}: {error}")
            out["problems"].append(f"{node}: no journal")
            out["unread"][node] = f"no journal ({error})" if error else "no journal"
            continue
        if len(raw) >= MAX_JOURNAL:
            out["problems"].append(f"{node}: journal cut at {MAX_JOURNAL} bytes")
            out["unread"][node] = f"journal cut at {MAX_JOURNAL} bytes"
            raw = raw[:MAX_JOURNAL]
        out["nodes"][node] = _lines(node, raw, ctx.origin, out)
    return out


def _lines(node: str, raw: bytes, origin: float, out: dict[str, Any]) -> int:
    """Add one node's journal lines to ``out``; returns how many were kept."""
    n = 0
    # line by line from the bytes: a journal of 32 MiB is not copied whole twice more
    for i, line in enumerate(io.BytesIO(raw), 1):
        if not line.strip():
            continue
        try:
            # the proxy writes values as strings, so only a line cut short reads as deep: bounded
            # all the same (TooDeep is a ValueError), never a RecursionError
            rec = loads_bounded(line)
        except ValueError:
            out["problems"].append(f"{node}: journal line {i} is not JSON")
            continue
        if not isinstance(rec, dict) or rec.get("node") != node:
            out["problems"].append(f"{node}: journal line {i} names another node")
            continue
        mono = rec.get("mono")
        if isinstance(mono, int | float):
            # on the run's clock, as ops and events are (containers share CLOCK_MONOTONIC)
            rec["time"] = round(float(mono) - origin, 6)
        out["entries"].append(rec)
        n += 1
    return n
