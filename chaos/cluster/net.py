"""Network partitions inside each node's own network namespace, and probes that prove them.

Mechanics: a chain of chaos's own, ``CHAOS-<run id>``, is created in every node's namespace and
jumped to from ``INPUT``; a grudge ``{receiver: [senders]}`` becomes ``-s <sender> -j DROP`` rules
in the receiver's chain. Heal flushes exactly that chain, never the node's other rules, so it is
idempotent and cannot undo anything chaos did not do. Rules live in the node's namespace, not in the
host's FORWARD chain, which bridged traffic can bypass.

Why DROP and not REJECT: a real partition (a cable pulled, a switch down) makes packets vanish;
peers learn about it only from timeouts. REJECT answers with an ICMP error or a TCP reset, so
clients fail fast and fail over at once, which hides exactly the timeout handling and the stale
connections a partition is meant to exercise. DROP also stalls established connections, as a real
cut does.

Only the addresses of the cluster's own nodes are ever named in a rule: the orchestrator (the host,
on the bridge's gateway) always keeps reaching every node, like Jepsen's control node.

Probes run the host's Python inside the node's namespace (``nsenter -n`` keeps the host's files)
and try a TCP connection to each peer. A connection that completes or is refused proves the path is
up (a reset came back); a timeout means the packets vanish. A cut is verified when every cut pair
times out in both directions and every pair left up connects or is refused.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chaos.cluster.base import ExecResult

PROBE_TIMEOUT = 0.4


class NetCluster(Protocol):
    """The part of the Cluster contract partitions need."""

    run_id: str
    nodes: list[str]

    def address(self, node: str) -> str: ...

    def net_exec(self, node: str, argv: list[str]) -> ExecResult: ...


@runtime_checkable
class NsCommand(Protocol):
    """Optional: the argv prefix that runs a host command in a node's network namespace (a probe
    that must run alongside another, as a loss probe's receiver does)."""

    def ns_command(self, node: str) -> list[str]: ...


class PartitionError(RuntimeError):
    """A rule could not be installed or removed, or a probe contradicts the intended cut."""


def chain_name(run_id: str) -> str:
    # iptables chain names are at most 28 characters
    return f"CHAOS-{run_id}"[:28]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    src: str
    dst: str
    outcome: str  # "open" | "refused" | "timeout" | "error: ..."

    @property
    def reachable(self) -> bool:
        return self.outcome in ("open", "refused")


def _ipt(cluster: NetCluster, node: str, *args: str) -> ExecResult:
    return cluster.net_exec(node, ["iptables", "-w", "5", *args])


def ensure_chain(cluster: NetCluster, node: str) -> str:
    """Create the run's chain and the jump from INPUT, once; returns the chain name."""
    chain = chain_name(cluster.run_id)
    if not _ipt(cluster, node, "-n", "-L", chain).ok:
        r = _ipt(cluster, node, "-N", chain)
        if not r.ok and "exists" not in r.output:
            raise PartitionError(f"{node}: iptables -N {chain}: {r.output.strip()}")
    if not _ipt(cluster, node, "-C", "INPUT", "-j", chain).ok:
        r = _ipt(cluster, node, "-I", "INPUT", "1", "-j", chain)
        if not r.ok:
            raise PartitionError(f"{node}: iptables -I INPUT -j {chain}: {r.output.strip()}")
    return chain


def apply_grudge(cluster: NetCluster, grudge: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Install DROP rules for ``grudge``; returns the rules per node (for the record)."""
    rules: dict[str, list[str]] = {}

    def one(node: str, senders: list[str]) -> None:
        chain = ensure_chain(cluster, node)
        lines = []
        for s in senders:
            addr = cluster.address(s)
            r = _ipt(cluster, node, "-A", chain, "-s", f"{addr}/32", "-j", "DROP")
            if not r.ok:
                raise PartitionError(f"{node}: iptables -A {chain} -s {addr}: {r.output.strip()}")
            lines.append(f"-A {chain} -s {addr}/32 -j DROP  # from {s}")
        rules[node] = lines

    items = [(n, sorted(set(p))) for n, p in grudge.items() if p]
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        for f in [pool.submit(one, n, p) for n, p in items]:
            f.result()
    return dict(sorted(rules.items()))


def remove_grudge(cluster: NetCluster, grudge: Mapping[str, Iterable[str]]) -> None:
    """Delete one instance of each rule ``apply_grudge`` added for ``grudge`` (others stay).

    Two partitions that overlap in time may install the same rule twice; deleting one instance per
    heal keeps the other partition's cut in place until its own heal.
    """
    chain = chain_name(cluster.run_id)

    def one(node: str, senders: list[str]) -> None:
        for s in senders:
            _ipt(cluster, node, "-D", chain, "-s", f"{cluster.address(s)}/32", "-j", "DROP")

    items = [(n, sorted(set(p))) for n, p in grudge.items() if p]
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        for f in [pool.submit(one, n, p) for n, p in items]:
            f.result()


def merge(grudges: Iterable[Mapping[str, Iterable[str]]]) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for g in grudges:
        for n, peers in g.items():
            out.setdefault(n, set()).update(peers)
    return {n: sorted(p) for n, p in sorted(out.items()) if p}


def heal(cluster: NetCluster, nodes: Iterable[str] | None = None) -> dict[str, str]:
    """Flush the run's chain on every node (idempotent: a node without the chain is fine)."""
    chain = chain_name(cluster.run_id)
    out: dict[str, str] = {}

    def one(node: str) -> None:
        r = _ipt(cluster, node, "-F", chain)
        if r.ok:
            out[node] = "flushed"
        elif "No chain" in r.output or "does not exist" in r.output:
            out[node] = "no chain"
        else:
            raise PartitionError(f"{node}: iptables -F {chain}: {r.output.strip()}")

    targets = list(nodes if nodes is not None else cluster.nodes)
    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        for f in [pool.submit(one, n) for n in targets]:
            f.result()
    return dict(sorted(out.items()))


def rules(cluster: NetCluster, node: str) -> list[str]:
    """The rules currently in the run's chain on ``node`` (``iptables -S``)."""
    r = _ipt(cluster, node, "-S", chain_name(cluster.run_id))
    return [ln for ln in r.output.splitlines() if ln.startswith("-A")] if r.ok else []


_PROBE = r"""
import json, socket, sys, concurrent.futures as cf
port, timeout, peers = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
def one(addr):
    s = socket.socket(); s.settimeout(timeout)
    try:
        s.connect((addr, port)); return addr, "open"
    except ConnectionRefusedError:
        return addr, "refused"
    except (TimeoutError, socket.timeout):
        return addr, "timeout"
    except OSError as e:
        return addr, "error: %s" % e
    finally:
        s.close()
with cf.ThreadPoolExecutor(len(peers) or 1) as p:
    print(json.dumps(dict(p.map(one, peers))))
"""


def probe(
    cluster: NetCluster,
    port: int,
    timeout: float = PROBE_TIMEOUT,
    nodes: Iterable[str] | None = None,
) -> list[ProbeResult]:
    """From inside each node's namespace, try a TCP connection to every other node's ``port``."""
    names = list(nodes if nodes is not None else cluster.nodes)
    addr_of = {n: cluster.address(n) for n in cluster.nodes}
    node_of = {a: n for n, a in addr_of.items()}
    results: list[ProbeResult] = []

    def one(src: str) -> list[ProbeResult]:
        peers = [addr_of[n] for n in cluster.nodes if n != src]
        r = cluster.net_exec(src, [sys.executable, "-c", _PROBE, str(port), str(timeout), *peers])
        try:
            got = json.loads(r.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return [
                ProbeResult(src=src, dst=node_of[a], outcome=f"error: {r.output.strip()}")
                for a in peers
            ]
        return [ProbeResult(src=src, dst=node_of[a], outcome=str(o)) for a, o in got.items()]

    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        for part in pool.map(one, names):
            results += part
    return sorted(results, key=lambda p: (p.src, p.dst))


def expected_blocked(grudge: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """Directed (src, dst) connection attempts a grudge must break: either direction dropped."""
    out: set[tuple[str, str]] = set()
    for receiver, senders in grudge.items():
        for s in senders:
            out |= {(receiver, s), (s, receiver)}
    return out


def verify(
    cluster: NetCluster,
    grudge: Mapping[str, Iterable[str]],
    port: int,
    *,
    attempts: int = 3,
) -> list[ProbeResult]:
    """Probe until the network matches ``grudge`` (an empty grudge: fully connected) or fail.

    A few attempts, because a freshly flushed chain or a restarting listener can make one probe
    disagree for a moment; a rule that is not there never makes three in a row agree.
    """
    blocked = expected_blocked(grudge)
    wrong: list[ProbeResult] = []
    results: list[ProbeResult] = []
    for _ in range(attempts):
        results = probe(cluster, port)
        wrong = [
            p
            for p in results
            if p.outcome.startswith("error") or ((p.src, p.dst) in blocked) == p.reachable
        ]
        if not wrong:
            return results
    detail = ", ".join(f"{p.src}->{p.dst} {p.outcome}" for p in wrong)
    want = "cut" if grudge else "healed"
    raise PartitionError(f"the network is not {want} as intended: {detail}")


def summary(results: Iterable[ProbeResult]) -> dict[str, str]:
    return {f"{p.src}->{p.dst}": p.outcome for p in results}


# ---------------------------------------------------------------- lossy links


def loss_rule(cluster: NetCluster, sender: str, probability: float) -> list[str]:
    """The rule (after ``-A/-D <chain>``) that drops a random ``probability`` of what ``sender``
    sends: iptables' statistic match draws per packet, in the kernel."""
    return [
        "-s", f"{cluster.address(sender)}/32",
        "-m", "statistic", "--mode", "random", "--probability", f"{probability:.4f}",
        "-j", "DROP",
    ]  # fmt: skip


def apply_loss(
    cluster: NetCluster, links: Mapping[str, Iterable[str]], probability: float
) -> dict[str, list[str]]:
    """Drop ``probability`` of the packets on each link ``{receiver: [senders]}``, in the run's
    chain (the one partitions use); returns the rules per node, for the record."""
    chain = chain_name(cluster.run_id)
    out: dict[str, list[str]] = {}
    for node, senders in sorted(links.items()):
        ensure_chain(cluster, node)
        for s in sorted(set(senders)):
            r = _ipt(cluster, node, "-A", chain, *loss_rule(cluster, s, probability))
            if not r.ok:
                raise PartitionError(f"{node}: iptables -A {chain} (loss from {s}): {r.output}")
            out.setdefault(node, []).append(f"-A {chain} -s {s} {probability:.0%} DROP")
    return out


def remove_loss(
    cluster: NetCluster, links: Mapping[str, Iterable[str]], probability: float
) -> None:
    """Delete one instance of each rule ``apply_loss`` added (idempotent: a missing rule is fine)."""
    chain = chain_name(cluster.run_id)
    for node, senders in sorted(links.items()):
        for s in sorted(set(senders)):
            _ipt(cluster, node, "-D", chain, *loss_rule(cluster, s, probability))


# the receiving side of a loss probe: count datagrams on a UDP port until the sender's "end"
# marker arrives three times in a row (the markers are sent repeatedly, and may be dropped too)
_LOSS_RECV = r"""
import json, socket, sys, time
port, wait, token, src, n = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", port)); s.settimeout(0.3)
print("ready", flush=True)
# the sender's "end" ends it; were every "end" lost, 3 s without a datagram does. A shorter gap
# is a sender the CPU left waiting (at load 30, 0.3 s cut a 30 % loss probe to 91 %)
got, deadline, last = set(), time.monotonic() + wait, time.monotonic()
while time.monotonic() < deadline:
    try:
        data, (addr, _) = s.recvfrom(64)
    except socket.timeout:
        if got and time.monotonic() - last > 3.0:
            break
        continue
    # only the probe's own datagrams count: the node's code can send to this port too, but it
    # does not know the token (a host argument), and no service can send from the source's address
    head, _, tail = data.decode("ascii", "replace").partition(" ")
    if addr != src or head != token:
        continue
    last = time.monotonic()
    if tail == "end":
        break
    if tail.isdigit() and int(tail) < n:
        got.add(int(tail))
print(json.dumps({"received": len(got)}))
"""

_LOSS_SEND = r"""
import socket, sys, time
addr, port, n, token = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(n):
    s.sendto(f"{token} {i}".encode(), (addr, port)); time.sleep(0.001)
time.sleep(0.2)
for _ in range(20):
    s.sendto(f"{token} end".encode(), (addr, port)); time.sleep(0.01)
"""

LOSS_PROBE_PORT = 39_871
LOSS_PROBE_PACKETS = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class LossProbe:
    src: str
    dst: str
    sent: int
    received: int

    @property
    def loss(self) -> float:
        return 1.0 - self.received / self.sent if self.sent else 0.0


def probe_loss(
    cluster: NetCluster,
    src: str,
    dst: str,
    packets: int = LOSS_PROBE_PACKETS,
    port: int = LOSS_PROBE_PORT,
) -> LossProbe:
    """Send ``packets`` numbered UDP datagrams from ``src`` to ``dst`` (both inside the nodes'
    namespaces) and count the distinct ones that arrived: the loss of that direction. Probes that
    run at once into one node need a ``port`` each."""
    if not isinstance(cluster, NsCommand):
        raise PartitionError("this backend cannot run a loss probe")
    token = secrets.token_hex(8)
    # the receiver runs while the sender sends, so it is a process of its own
    recv = subprocess.Popen(
        [*cluster.ns_command(dst), sys.executable, "-c", _LOSS_RECV,
         str(port), "20", token, cluster.address(src), str(packets)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert recv.stdout is not None
        recv.stdout.readline()  # "ready": bound before the first datagram leaves
        cluster.net_exec(
            src,
            [sys.executable, "-c", _LOSS_SEND, cluster.address(dst), str(port), str(packets),
             token],
        )  # fmt: skip
        out, _ = recv.communicate(timeout=30)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    try:
        received = int(json.loads(out.strip().splitlines()[-1])["received"])
    except (ValueError, IndexError, KeyError):
        raise PartitionError(f"loss probe {src}->{dst}: no answer from the receiver") from None
    return LossProbe(src=src, dst=dst, sent=packets, received=received)


def netem_available() -> tuple[bool, str]:
    """Whether this kernel has ``sch_netem`` (delay, duplication): tried in a throwaway network
    namespace of the host's (same kernel as the nodes), so nothing real is touched."""
    try:
        p = subprocess.run(
            ["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{type(e).__name__}: {e}"
    return p.returncode == 0, (p.stdout + p.stderr).strip()
