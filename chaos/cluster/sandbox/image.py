"""The sandbox's image: a Debian root filesystem with sshd and sudo, standing in for a VM.

Built like the node image (``debootstrap`` from the mirror apt already uses, then ``docker
import``), but from its own package list, so that the node image's inputs and tag stay unchanged.
Deliberately *without* etcd, nats-server or chaos's wheels: the SSH backend must install those
itself, over SFTP, as it would on a real machine.

Two users: ``chaos`` may use ``sudo`` without a password (what the backend needs for iptables);
``student`` may not (to show the error a node without sudo gets). Both accept the key ``chaos
sandbox up`` generates, read from a file mounted at run time.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import docker
import docker.errors

from chaos.cluster.base import ClusterError, Progress
from chaos.cluster.docker import image as node_image
from chaos.cluster.node_kit.software import SUITE

REPO = "chaos-sandbox"
PACKAGES = [
    "python3",
    "python3-venv",
    "iproute2",
    "iptables",
    "procps",
    "openssh-server",
    "sudo",
]
RECIPE_VERSION = "1"
AUTHORIZED_KEYS = "/etc/chaos-sandbox/authorized_keys"

DOCKERFILE = f"""\
FROM {{base}}
RUN useradd -m -s /bin/sh chaos \\
 && useradd -m -s /bin/sh student \\
 && echo 'chaos ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/chaos \\
 && chmod 0440 /etc/sudoers.d/chaos \\
 && rm -f /etc/ssh/ssh_host_* \\
 && mkdir -p /run/sshd /etc/chaos-sandbox \\
 && printf 'AuthorizedKeysFile {AUTHORIZED_KEYS}\\nPasswordAuthentication no\\nUseDNS no\\n' \\
    > /etc/ssh/sshd_config.d/chaos.conf
"""


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def base_tag() -> str:
    return f"{REPO}-base:{_hash(SUITE, *PACKAGES)}"


def image_tag() -> str:
    return f"{REPO}:{_hash(RECIPE_VERSION, base_tag(), DOCKERFILE)}"


def build(client: docker.DockerClient, progress: Progress, *, force: bool = False) -> str:
    """The sandbox image's tag, built once (about a minute) and reused while its inputs hold."""
    tag = image_tag()
    if not force and node_image.have(client, tag):
        return tag
    base = base_tag()
    if force or not node_image.have(client, base):
        node_image.build_base(client, base, progress, packages=PACKAGES)
    with tempfile.TemporaryDirectory(prefix="chaos-sandbox-") as tmp:
        (Path(tmp) / "Dockerfile").write_text(DOCKERFILE.format(base=base))
        progress(f"building {tag}")
        try:
            client.images.build(path=tmp, tag=tag, rm=True, forcerm=True, network_mode="none")
        except docker.errors.BuildError as e:
            log = "".join(str(x.get("stream", "")) for x in e.build_log)[-2000:]
            raise ClusterError(f"sandbox image build failed: {e}\n{log}") from e
    return tag
