"""``chaos sandbox up N`` / ``down``: local containers running sshd, standing in for VMs.

Each node has host keys of its own (generated when it starts) and accepts one user key generated
here. ``up`` writes the nodes' host keys into a known_hosts file of the sandbox's own and a
``nodes.yaml`` naming the nodes, the key and that file, so the SSH backend verifies host keys as
it would on real machines. Docker is used only to create and remove the containers and to read
their fresh public host keys; the backend reaches them only over SSH.

The containers carry ``chaos.sandbox=<name>``, never ``chaos.project``: the Docker backend's
cleanup must not mistake a sandbox for a crashed run.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from chaos.cluster.base import ClusterError, Progress, node_name
from chaos.cluster.docker.resources import engine
from chaos.cluster.sandbox import image as sandbox_image

LABEL = "chaos.sandbox"
STATE = Path("~/.local/state/chaos/sandbox").expanduser()
HOST_KEY_TYPES = ("ed25519", "ecdsa", "rsa")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    name: str
    nodes_file: Path
    addresses: list[str]
    seconds: float


def state_dir(name: str) -> Path:
    return STATE / name


def _user_key(folder: Path) -> Path:
    key = folder / "id_ed25519"
    if not key.exists():
        folder.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "chaos-sandbox", "-f", str(key)],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise ClusterError(f"ssh-keygen failed: {p.stderr.strip()}")
    return key


def _wait_ssh(addr: str, deadline: float) -> None:
    while True:
        try:
            with socket.create_connection((addr, 22), 0.5) as s:
                s.settimeout(1.0)
                if s.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ClusterError(f"sshd on {addr} did not answer")
        time.sleep(0.1)


def _host_keys(container: Any) -> list[str]:
    keys = []
    for t in HOST_KEY_TYPES:
        code, out = container.exec_run(["cat", f"/etc/ssh/ssh_host_{t}_key.pub"])
        if code == 0:
            keys.append(" ".join(out.decode().split()[:2]))
    return keys


def up(
    n: int,
    *,
    name: str = "sandbox",
    out: Path | None = None,
    user: str = "chaos",
    progress: Progress = lambda m: None,
) -> Sandbox:
    """Start ``n`` sshd containers on a network of their own; write their nodes file."""
    if n < 1:
        raise ValueError("a sandbox needs at least one node")
    client = engine()
    if _containers(client, name):
        raise ClusterError(f"sandbox {name} is already up; `chaos sandbox down` first")
    t0 = time.monotonic()
    tag = sandbox_image.build(client, progress)
    folder = state_dir(name)
    key = _user_key(folder)
    pub = key.with_suffix(".pub")
    pub.chmod(0o644)
    labels = {LABEL: name}
    net = client.networks.create(f"chaos-{name}", driver="bridge", labels=labels)
    try:
        containers = [_run_node(client, tag, name, i, net.name, pub) for i in range(1, n + 1)]
        addrs = _reachable(containers, net.name)
        known = folder / "known_hosts"
        known.write_text(
            "".join(
                f"{a} {k}\n" for c, a in zip(containers, addrs, strict=True) for k in _host_keys(c)
            )
        )
    except BaseException:
        down(name=name)
        raise
    nodes_file = (out or folder / "nodes.yaml").resolve()
    _write_nodes_file(nodes_file, name, n, known, key, user, addrs)
    return Sandbox(name=name, nodes_file=nodes_file, addresses=addrs, seconds=time.monotonic() - t0)


def _run_node(
    client: docker.DockerClient, tag: str, name: str, i: int, network: str, pub: Path
) -> Any:
    """Node ``i``: sshd with fresh host keys, labelled with the sandbox (so `down` finds it),
    the user's public key its only way in."""
    return client.containers.run(
        tag,
        ["sh", "-c", "ssh-keygen -A -q && exec /usr/sbin/sshd -D -e"],
        name=f"chaos-{name}-{node_name(i)}",
        hostname=node_name(i),
        labels={LABEL: name},
        init=True,
        cap_add=["NET_ADMIN"],
        network=network,
        volumes={
            str(pub): {"bind": sandbox_image.AUTHORIZED_KEYS, "mode": "ro"},
        },
        detach=True,
    )


def _reachable(containers: list[Any], network: str) -> list[str]:
    """Each container's address once its sshd answers there (30 s for them all)."""
    addrs = []
    deadline = time.monotonic() + 30
    for c in containers:
        c.reload()
        addr = c.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
        _wait_ssh(addr, deadline)
        addrs.append(addr)
    return addrs


def _write_nodes_file(
    path: Path, name: str, n: int, known: Path, key: Path, user: str, addrs: list[str]
) -> None:
    """The nodes file `chaos run --nodes-file` reads: the sandbox's hosts, how to log in, and the
    known_hosts that pins their keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"# chaos sandbox {name}: {n} local containers running sshd (`chaos sandbox down` removes)\n"
        f"known_hosts: {known}\n"
        f"key: {key}\n"
        f"user: {user}\n"
        "sudo: true\n"
        "nodes:\n" + "".join(f"  - host: {a}\n" for a in addrs)
    )


def _containers(client: docker.DockerClient, name: str) -> list[Any]:
    return list(client.containers.list(all=True, filters={"label": f"{LABEL}={name}"}))


def down(*, name: str = "sandbox") -> list[str]:
    """Remove the sandbox's containers, network and keys; returns what it removed."""
    client = engine()
    removed = []
    for c in _containers(client, name):
        try:
            c.remove(force=True)
            removed.append(f"container {c.name}")
        except docker.errors.NotFound:
            pass
    for net in client.networks.list(filters={"label": f"{LABEL}={name}"}):
        try:
            net.remove()
            removed.append(f"network {net.name}")
        except docker.errors.NotFound:
            pass
    folder = state_dir(name)
    if folder.exists():
        shutil.rmtree(folder)
        removed.append(f"keys and known_hosts in {folder}")
    return removed
