"""What a node needs, installed over SFTP without internet: the servers, the clients, the code.

The etcd and nats-server binaries and the Python clients come from the very wheels the Docker
node image installs (``chaos.cluster.node_kit.software.WHEELS``), downloaded once on the orchestrator's
machine with pip, uploaded and installed with ``pip --no-index`` into a venv on the node that is
cached by version (``/var/lib/chaos/venvs/<hash>``): a second run on the same machine reuses it.
chaos's own source and the solution are uploaded into the run's folder as one tarball each, so
that what runs on the node is exactly the orchestrator's code.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

from chaos.cluster.base import ClusterError, Progress
from chaos.cluster.node_kit.software import WHEELS, wheel_names
from chaos.cluster.ssh.conn import Connection

BASE = "/var/lib/chaos"
RUNS = f"{BASE}/runs"
VENVS = f"{BASE}/venvs"
CACHE = Path("~/.cache/chaos/wheels").expanduser()
PIP = f"pip=={version('pip')}"


def venv_key(python: str) -> str:
    """A node venv's name: the wheels and the node's Python version."""
    return hashlib.sha256("\0".join([python, *WHEELS, "no-pip"]).encode()).hexdigest()[:12]


def wheelhouse(python: str, progress: Progress) -> Path:
    """The wheels for a node's Python (``3.11``), downloaded on this machine once."""
    d = CACHE / venv_key(python)
    if (d / ".complete").exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    progress(f"downloading the node wheels for Python {python}")
    # pip itself comes along as a wheel: run from it, it installs into a venv made without pip,
    # which is seconds faster per node than `python3 -m venv` bootstrapping its own (ensurepip)
    argv = [sys.executable, "-m", "pip", "download", "-q", "-d", str(d), *WHEELS, PIP]
    host = f"{sys.version_info.major}.{sys.version_info.minor}"
    if python != host:
        argv += ["--python-version", python, "--only-binary=:all:"]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-10:])
        raise ClusterError(f"pip download of the node wheels failed:\n{tail}")
    (d / ".complete").write_text("\n".join(WHEELS) + "\n")
    return d


def ensure_venv(conn: Connection, python: str, progress: Progress) -> str:
    """The node's venv for these wheels (installed now if missing); returns its path."""
    venv = f"{VENVS}/{venv_key(python)}"
    if conn.run(f"test -f {venv}/.complete", timeout=10).ok:
        return venv
    house = wheelhouse(python, progress)
    progress(f"{conn.node.name}: installing etcd, nats-server and the clients into {venv}")
    stage = f"{venv}.wheels"
    r = conn.run(f"rm -rf {venv} {stage} && mkdir -p {stage}", timeout=30)
    if not r.ok:
        raise ClusterError(f"{conn.node.label}: cannot create {stage}: {r.output.strip()}")
    for f in sorted(house.glob("*.whl")):
        conn.put_file(f, f"{stage}/{f.name}")
    names = " ".join(wheel_names())
    pip = next(house.glob("pip-*.whl")).name
    # --no-compile: the nodes run with PYTHONDONTWRITEBYTECODE anyway, and compiling every module
    # of grpcio and protobuf on each node was most of the install's time
    r = conn.run(
        f"python3 -m venv --without-pip {venv} && {venv}/bin/python3 {stage}/{pip}/pip install "
        f"-q --no-compile --no-index --find-links {stage} {names} && rm -rf {stage} "
        f"&& touch {venv}/.complete",
        timeout=300,
    )
    if not r.ok:
        raise ClusterError(
            f"{conn.node.label}: installing the node wheels failed:\n{r.output.strip()[-1500:]}"
        )
    return venv


def tarball(root: Path, *, under: str = "") -> bytes:
    """A gzip tar of ``root`` (without caches), its members under ``under``."""
    buf = io.BytesIO()

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        return None if "__pycache__" in parts or info.name.endswith(".pyc") else info

    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(root), arcname=under or ".", filter=keep)
    return buf.getvalue()


def upload_tree(conn: Connection, data: bytes, dest: str) -> None:
    """Unpack a :func:`tarball` into ``dest`` on the node."""
    tmp = f"{dest}.tar.gz"
    conn.run(f"mkdir -p {dest}", timeout=10)
    conn.put(tmp, data)
    r = conn.run(f"tar -xzf {tmp} -C {dest} && rm -f {tmp}", timeout=60)
    if not r.ok:
        raise ClusterError(f"{conn.node.label}: unpacking into {dest} failed: {r.output.strip()}")
