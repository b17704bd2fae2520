"""The code under test reaches its own cluster's members and nothing else: no address of the host,
no node of another run (issue 21, part 1).

Probes run inside a node as the service user (uid 65534, as the lab's services do) and try a TCP
connection to listeners this test opens on the host: one on every address (``0.0.0.0`` and
``::``) and one bound to the run bridge's gateway only, plus a listener in a node of another run
started beside it. A control shows each listener answers (from the host, and from a container on
an internal bridge chaos did not confine: the attack the issue measured), so "unreachable" means
the run's host chain refused it. Only addresses of this machine's own interfaces are probed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

import chaos
from chaos.cluster.docker import firewall, image
from chaos.cluster.docker.cluster import DockerCluster
from chaos.cluster.node_kit.owner import owner_token
from tests.integration.conftest import chaos as chaos_cli
from tests.integration.conftest import chaos_bg, leftovers, run_dir_from, wait_for_line

pytestmark = pytest.mark.integration

SRC = Path(chaos.__file__).resolve().parents[1]
SERVICE_USER = "65534:65534"
# the lab's ports (etcd client and peer, NATS, the lab3 API)
LAB_PORTS = (2379, 2380, 4222, 8080)

# runs inside a node: try each (host, port) at once, print {"host port": outcome}
PROBE = """
import errno, json, os, socket, sys
from concurrent.futures import ThreadPoolExecutor
def one(t):
    host, port = t
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        s = socket.socket(info[0], socket.SOCK_STREAM)
        s.settimeout(2.0)
        s.connect(info[4])
        s.close()
        return "open"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
targets = json.loads(sys.argv[1])
with ThreadPoolExecutor(len(targets)) as pool:
    out = dict(zip([f"{h} {p}" for h, p in targets], pool.map(one, targets)))
print(json.dumps({"uid": os.getuid(), "outcomes": out}))
"""

# runs inside a node: listen on the given ports until killed; a file says once they all listen
LISTEN = """
import socket, sys, time
socks = []
for p in sys.argv[1:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(p))); s.listen(16); socks.append(s)
open("/tmp/listening-" + "-".join(sys.argv[1:]), "w").close()
time.sleep(600)
"""


def listen(c: DockerCluster, node: str, ports: tuple[int, ...], user: str | None = None) -> None:
    """Start LISTEN in ``node`` and return once every port listens: a probe sent before that
    meets a refusal that says nothing about the chains (a loaded engine can take seconds)."""
    args = [str(p) for p in ports]
    assert c.spawn(node, "listen-" + "-".join(args), ["python3", "-c", LISTEN, *args], user=user)
    # /tmp is the node's own tmpfs, which the engine's archive reader does not see: ask the node
    seen = [
        "docker",
        "exec",
        c.container_name(node),
        "test",
        "-e",
        "/tmp/listening-" + "-".join(args),
    ]
    deadline = time.monotonic() + 60
    while subprocess.run(seen, capture_output=True, timeout=60).returncode != 0:
        assert time.monotonic() < deadline, f"the listener on {node} never listened on {ports}"
        time.sleep(0.1)


def probe(
    container: str, targets: list[tuple[str, int]], user: str = SERVICE_USER
) -> dict[str, str]:
    p = subprocess.run(
        ["docker", "exec", "-u", user, container, "python3", "-c", PROBE, json.dumps(targets)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["uid"] == int(user.split(":")[0]), "the probe runs as the user asked"
    return dict(out["outcomes"])


def host_addresses() -> list[str]:
    """Every address of every interface of this machine but loopback (from a node, 127.0.0.1 is
    the node itself). A link-local IPv6 address is tried through the node's own eth0."""
    data = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True,
                                     check=True).stdout)  # fmt: skip
    out = []
    for iface in data:
        if iface["ifname"] == "lo":
            continue
        for a in iface.get("addr_info", []):
            ip = ipaddress.ip_address(a["local"])
            out.append(f"{ip}%eth0" if ip.version == 6 and ip.is_link_local else str(ip))
    return out


# runs inside a node: send a few datagrams to each (host, port)
DATAGRAMS = """
import json, socket, sys
for host, port in json.loads(sys.argv[1]):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(3):
            try:
                s.sendto(b"probe", (host, port))
            except OSError:
                pass
"""


def send_datagrams(container: str, targets: list[tuple[str, int]]) -> None:
    p = subprocess.run(
        ["docker", "exec", "-u", SERVICE_USER, container, "python3", "-c", DATAGRAMS,
         json.dumps(targets)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr


class UdpListener:
    """A UDP socket on the host (every IPv4 address) that notes who sent to it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("0.0.0.0", 0))
        self.port = int(self.sock.getsockname()[1])
        self.peers: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                _, peer = self.sock.recvfrom(64)
                self.peers.append(str(peer[0]))

    def heard_from(self, addr: str, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if addr in self.peers:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.sock.close()


class Listener:
    """A TCP listener on the host that notes who connected."""

    def __init__(self, host: str, family: int = socket.AF_INET) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.peers: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, peer = self.sock.accept()
                self.peers.append(str(peer[0]))
                conn.close()

    def close(self) -> None:
        self.sock.close()


def host_connects(host: str, port: int) -> bool:
    host, _, scope = host.partition("%")
    if scope:
        return True  # a link-local address needs the bridge's scope: the v4 controls suffice
    with contextlib.suppress(OSError), socket.create_connection((host, port), 2):
        return True
    return False


def gateway(engine: docker.DockerClient, run_id: str) -> str:
    net = engine.networks.get(f"chaos-{run_id}")
    return str(net.attrs["IPAM"]["Config"][0]["Gateway"])


def host_rules(run_id: str) -> list[str]:
    """Every line of the host's IPv4 and IPv6 tables that names the run."""
    out = []
    for tool in ("iptables-save", "ip6tables-save"):
        p = subprocess.run([tool], capture_output=True, text=True)
        out += [ln for ln in p.stdout.splitlines() if run_id in ln]
    return out


@contextlib.contextmanager
def cluster(engine: docker.DockerClient, nodes: int = 2) -> Iterator[DockerCluster]:
    tag = image.build_image(engine, lambda m: None)
    live = Path(tempfile.mkdtemp(prefix="chaos-confine-")) / "live"
    live.mkdir()
    with DockerCluster(
        run_id="t" + secrets.token_hex(4), nodes=nodes, image=tag, src_dir=SRC,
        live_dir=live, client=engine,
    ) as c:  # fmt: skip
        yield c


@contextlib.contextmanager
def unconfined(engine: docker.DockerClient) -> Iterator[tuple[str, str]]:
    """A container on an internal bridge with no host chain: what a node was before issue 21.
    Yields its name and its gateway."""
    name = f"chaos-confine-control-{secrets.token_hex(3)}"
    net = engine.networks.create(name, driver="bridge", internal=True)
    try:
        c = engine.containers.run(
            image.build_image(engine, lambda m: None), ["sleep", "120"], name=name,
            network=name, detach=True, cap_drop=["ALL"], remove=True,
        )  # fmt: skip
        try:
            yield name, str(net.attrs["IPAM"]["Config"][0]["Gateway"])
        finally:
            with contextlib.suppress(docker.errors.APIError):
                c.remove(force=True)
    finally:
        net.remove()


def test_a_node_reaches_its_own_members_but_no_host_address_and_no_other_run(
    engine: docker.DockerClient,
) -> None:
    t0 = time.monotonic()
    with cluster(engine) as a, cluster(engine) as b:
        gw = gateway(engine, a.run_id)
        everywhere = Listener("0.0.0.0")
        everywhere6 = Listener("::", socket.AF_INET6)
        on_gateway = Listener(gw)
        udp = UdpListener()
        try:
            for c in (a, b):
                listen(c, "n2", LAB_PORTS, user="nobody")
            addresses = host_addresses()
            assert gw in addresses
            host_targets = [(h, everywhere6.port if ":" in h else everywhere.port)
                            for h in addresses] + [(gw, on_gateway.port)]  # fmt: skip
            # control 1: every listener answers on every address, from the host itself (other
            # runs' bridges come and go meanwhile: an address gone from the host is not probed)
            silent = [(h, p) for h, p in host_targets if not host_connects(h, p)]
            assert not set(h for h, _ in silent) & set(host_addresses()), silent
            host_targets = [t for t in host_targets if t not in silent]
            assert (gw, on_gateway.port) in host_targets and len(host_targets) >= 3
            # control 2: from a bridge chaos did not confine, the same attack reaches the host
            with unconfined(engine) as (ctl, ctl_gw):
                seen = probe(ctl, [(ctl_gw, everywhere.port), (gw, on_gateway.port)])
                # and UDP: its datagrams arrive
                ctl_addr = engine.containers.get(ctl).attrs["NetworkSettings"]["Networks"][ctl][
                    "IPAddress"
                ]
                send_datagrams(ctl, [(ctl_gw, udp.port)])
                assert udp.heard_from(ctl_addr), udp.peers
            assert seen == {f"{ctl_gw} {everywhere.port}": "open",
                            f"{gw} {on_gateway.port}": "open"}, seen  # fmt: skip
            # control 3: the other run's listener answers its own members
            other = [(b.address("n2"), p) for p in LAB_PORTS]
            assert set(probe(b.container_name("n1"), other).values()) == {"open"}

            own = [(a.address("n2"), p) for p in LAB_PORTS]
            got = probe(a.container_name("n1"), host_targets + own + other)
            print(json.dumps(got, indent=1))
            for h, p in own:
                assert got[f"{h} {p}"] == "open", ("own member", h, p, got)
            for h, p in host_targets + other:
                outcome = got[f"{h} {p}"]
                assert outcome != "open", ("reached", h, p, got)
                if ":" not in h:
                    # a reset while the listener is up: the run's chain refused it, at once
                    # (Docker's own isolation drops; IPv6 is off in the nodes)
                    assert outcome == "ECONNREFUSED", (h, p, got)
            # and no listener ever accepted a connection from a node (the host's controls come
            # from the host's own addresses)
            peers = everywhere.peers + everywhere6.peers + on_gateway.peers
            assert not {a.address(n) for n in a.nodes} & set(peers), peers
            # nor a datagram (the chain takes every protocol, not only TCP)
            send_datagrams(a.container_name("n1"), [(h, udp.port) for h, _ in host_targets
                                                    if ":" not in h])  # fmt: skip
            assert not udp.heard_from(a.address("n1"), timeout=2.0), udp.peers
            assert host_rules(a.run_id), "the run's chain is on the host while it runs"
            rid = a.run_id
        finally:
            for listener in (everywhere, everywhere6, on_gateway, udp):
                listener.close()
    # torn down: no chain, no jump, no record of either run
    assert host_rules(rid) == [] and host_rules(b.run_id) == []
    assert not (firewall.RECORDS / f"{firewall.chain_for(rid)}.json").exists()
    print(f"probed {len(got)} targets; {time.monotonic() - t0:.1f} s")


def test_the_chain_closes_ipv4_and_ipv6_on_a_bridge_that_has_both(
    engine: docker.DockerClient,
) -> None:
    """chaos's run networks are IPv4 only (a node cannot turn IPv6 on: no capability), but a
    bridge with IPv6 would be confined too: the same attack, open before the chain, refused after
    it, on both families."""
    from docker.types import IPAMConfig, IPAMPool

    name = f"chaos-confine-v6-{secrets.token_hex(3)}"
    subnet = f"fd42:c4a0:{secrets.randbelow(1 << 16):x}::/64"  # a private (ULA) prefix
    net = engine.networks.create(
        name, driver="bridge", internal=True, enable_ipv6=True,
        ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=subnet)]),
    )  # fmt: skip
    # this process owns it: a reaper running meanwhile leaves it alone
    rec = firewall.Record(run_id="t6" + secrets.token_hex(4), bridge=f"br-{net.id[:12]}",
                          owner=owner_token(os.getpid()))  # fmt: skip
    v4, v6 = Listener("0.0.0.0"), Listener("::", socket.AF_INET6)
    ct = None
    try:
        ct = engine.containers.run(
            image.build_image(engine, lambda m: None), ["sleep", "120"], name=name,
            network=name, detach=True, cap_drop=["ALL"], remove=True,
        )  # fmt: skip
        net.reload()
        gws = [g["Gateway"] for g in net.attrs["IPAM"]["Config"] if g.get("Gateway")]
        gw6 = next((g for g in gws if ":" in g), None) or next(
            str(ipaddress.ip_network(g["Subnet"])[1])
            for g in net.attrs["IPAM"]["Config"] if ":" in g["Subnet"]
        )  # fmt: skip
        gw4 = next(g for g in gws if ":" not in g)
        v6_host = next(a for a in host_addresses() if ":" in a and "%" not in a and a != gw6)
        targets = [(gw4, v4.port), (gw6, v6.port), (v6_host, v6.port)]
        keys = [f"{h} {p}" for h, p in targets]
        # before: the bridge's gateway needs a moment for IPv6 duplicate address detection
        deadline = time.monotonic() + 20
        while True:
            before = probe(name, targets)
            if set(before.values()) == {"open"} or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert [before[k] for k in keys] == ["open"] * 3, before
        firewall.install(rec)
        after = probe(name, targets)
        assert [after[k] for k in keys] == ["ECONNREFUSED"] * 3, after
        assert firewall.remove(rec.run_id) == [
            f"host chain {rec.chain} (ipv4, 3 jump(s))",
            f"host chain {rec.chain} (ipv6, 3 jump(s))",
        ]
        assert host_rules(rec.run_id) == []
        again = probe(name, targets)
        assert [again[k] for k in keys] == ["open"] * 3, again
    finally:
        firewall.remove(rec.run_id)
        v4.close()
        v6.close()
        if ct is not None:
            with contextlib.suppress(docker.errors.APIError):
                ct.remove(force=True)
        net.remove()


@pytest.mark.exclusive
def test_a_killed_orchestrators_chain_stays_until_cleanup_removes_all_of_it(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    store = tmp_path / "store"
    proc = chaos_bg("run", "lab3", "--time-limit", "120", "--seed", "4", store=store)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not list(store.glob("lab3/2*/history.jsonl")):
            time.sleep(0.2)
        hist = next(iter(store.glob("lab3/2*/history.jsonl")))
        # the workload is under way: the services answered through the confined network
        assert wait_for_line(hist, lambda o: o.get("type") == "ok", 90.0), proc.poll()
        rid = json.loads((hist.parent / "spec.json").read_text())["run_id"]
        chain = firewall.chain_for(rid)
        rules = host_rules(rid)
        assert any(r.startswith("-A INPUT ") and r.endswith(f"-j {chain}") for r in rules)
        assert any(r.startswith("-A DOCKER-USER ") for r in rules), rules
        record = json.loads((firewall.RECORDS / f"{chain}.json").read_text())
        assert record["run_id"] == rid and record["owner"].startswith(f"{proc.pid}:")
        n2 = f"chaos-{rid}-n2"
        # the lab's real services answer their own members on the lab's ports (root, as etcd
        # and the broker reach each other); a service reaches none of them: its node's etcd
        # and NATS proxies are its way to etcd and the broker, and it has no business with
        # another api
        members = [(f"chaos-{rid}-n1", 2379), (f"chaos-{rid}-n1", 4222), (f"chaos-{rid}-n3", 8080)]
        addrs = {n: engine.containers.get(n).attrs["NetworkSettings"]["Networks"][f"chaos-{rid}"]
                 ["IPAddress"] for n, _ in members}  # fmt: skip
        listener = Listener("0.0.0.0")
        gw = gateway(engine, rid)
        try:
            targets = [(addrs[n], p) for n, p in members] + [(gw, listener.port)]
            got = probe(n2, targets, user="0:0")
            assert [got[f"{h} {p}"] for h, p in targets] == ["open"] * 3 + ["ECONNREFUSED"], got
            got = probe(n2, targets)
            assert [got[f"{h} {p}"] for h, p in targets] == ["ECONNREFUSED"] * 4, got

            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            # the nodes outlive their orchestrator, and so does their confinement
            assert host_rules(rid) == rules
            assert probe(n2, [(gw, listener.port)]) == {f"{gw} {listener.port}": "ECONNREFUSED"}
            assert listener.peers == []
        finally:
            listener.close()
        p = chaos_cli("cleanup", "--run", rid, store=None)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"removed host chain {chain} (ipv4, 3 jump(s))" in p.stdout, p.stdout
        assert host_rules(rid) == [], "no chain, jump or rule of the run is left"
        assert not (firewall.RECORDS / f"{chain}.json").exists()
        assert leftovers(engine, rid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_finished_run_leaves_no_rule_on_the_host(store: Path) -> None:
    p = chaos_cli("run", "lab3", "--time-limit", "3", "--recovery-timeout", "20", "--seed", "2",
                  store=store)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr  # the lab works through its confinement
    rid = json.loads((run_dir_from(p) / "spec.json").read_text())["run_id"]
    assert host_rules(rid) == []
    assert not (firewall.RECORDS / f"{firewall.chain_for(rid)}.json").exists()
