"""The SSH backend: the machines of a nodes file, reached only over SSH (paramiko).

``prepare`` connects to every node (in parallel, each bounded by the connection timeout), checks
what a run will need before anything is started — a Python 3 with venv, root or passwordless sudo
for iptables, a writable ``/var/lib/chaos`` — installs the node venv if it is missing, and reaps
what dead runs of this orchestrator's machine left. One connection per node is kept for the whole
invocation and shared by its runs.
"""

from __future__ import annotations

import json
import platform
import socket
from pathlib import Path

import chaos
from chaos.cluster.base import Cluster, ClusterError, Progress
from chaos.cluster.node_kit import software
from chaos.cluster.node_kit.owner import owner_alive
from chaos.cluster.ssh import install, remote
from chaos.cluster.ssh.cluster import SSHCluster, _pmap
from chaos.cluster.ssh.conn import Connection
from chaos.cluster.ssh.nodes import NodesFile, load
from chaos.cluster.ssh.options import NODES_FILE, OPTIONS

SRC_DIR = Path(chaos.__file__).resolve().parents[1]


class SSHBackend:
    name = "ssh"
    options = OPTIONS  # the keywords below, declared once (chaos.cluster.ssh.options)

    def __init__(self, nodes_file: Path | None = None) -> None:
        if nodes_file is None:
            raise ValueError(
                f"the ssh backend needs {NODES_FILE.flag} FILE (a nodes.yaml; see docs/backends.md)"
            )
        self.file: NodesFile = load(Path(nodes_file))
        self._conns = {
            n.name: Connection(n, self.file.known_hosts, accept_new=self.file.accept_new_host_keys)
            for n in self.file.nodes
        }
        self._python: dict[str, str] = {}
        self._venv: dict[str, str] = {}

    @property
    def machines(self) -> int:
        """GivenMachines: a run takes every machine of the nodes file."""
        return len(self.file.nodes)

    @property
    def given_by(self) -> str:
        return str(self.file.path)

    def supports(self, capability: type) -> bool:
        """Whether this backend's clusters have an optional capability (see ``Capable``)."""
        return issubclass(SSHCluster, capability)

    def _check(self, progress: Progress) -> None:
        def one(c: Connection) -> None:
            node = c.node
            r = c.run(
                "python3 -c 'import sys, venv; print(\"%d.%d\" % sys.version_info[:2])' && id -un",
                timeout=20,
            )
            if not r.ok:
                raise ClusterError(
                    f"{node.label}: needs python3 with the venv module: {r.output.strip()}"
                )
            self._python[node.name] = r.output.split()[0]
            if node.user != "root":
                if not node.sudo:
                    raise ClusterError(
                        f"{node.label}: partitions need iptables as root: connect as root, or "
                        "set sudo: true for a user with passwordless sudo"
                    )
                s = c.run("sudo -n true", timeout=15)
                if not s.ok:
                    raise ClusterError(
                        f"{node.label}: sudo is needed (iptables) but not allowed without a "
                        f"password: {s.output.strip() or 'sudo -n failed'}; allow passwordless "
                        "sudo for this user, or connect as root. Nothing was started."
                    )
            setup = remote.privileged(
                node.user,
                node.sudo,
                f"mkdir -p {install.RUNS} {install.VENVS} && "
                f"chown {node.user} {install.BASE} {install.RUNS} {install.VENVS}",
            )
            s = c.run(setup, timeout=15)
            if not s.ok:
                raise ClusterError(
                    f"{node.label}: cannot prepare {install.BASE}: {s.output.strip()}"
                )
            ipt = c.run(
                remote.privileged(node.user, node.sudo, "iptables -w 5 -n -L INPUT"), timeout=15
            )
            if not ipt.ok:
                raise ClusterError(f"{node.label}: iptables does not work: {ipt.output.strip()}")

        _pmap(one, list(self._conns.values()))

    def prepare(self, progress: Progress) -> dict[str, str]:
        progress(f"connecting to {len(self._conns)} node(s) over SSH")
        self._check(progress)
        leftovers = [ln for ln in self.reap() if ln.startswith("removed")]
        if leftovers:
            progress(f"removed {len(leftovers)} trace(s) left by a crashed earlier run")
        for py in sorted(set(self._python.values())):
            install.wheelhouse(py, progress)  # once per Python version, before the nodes ask
        self._venv = dict(
            zip(
                self._conns,
                _pmap(
                    lambda c: install.ensure_venv(c, self._python[c.node.name], progress),
                    list(self._conns.values()),
                ),
                strict=True,
            )
        )
        return {
            "chaos": chaos.__version__,
            **software.versions(),
            "node_python": ",".join(sorted(set(self._python.values()))),
            "nodes_file": str(self.file.path),
            "host_python": platform.python_version(),
        }

    def make_cluster(
        self, *, run_id: str, nodes: int, live_dir: Path, mounts: dict[str, str]
    ) -> Cluster:
        if nodes > len(self.file.nodes):
            raise ClusterError(
                f"{self.file.path} names {len(self.file.nodes)} node(s); the run needs {nodes}"
            )
        if not self._venv:
            raise ClusterError("the ssh backend was not prepared (call prepare first)")
        specs = list(self.file.nodes[:nodes])
        return SSHCluster(
            run_id=run_id,
            nodes=specs,
            conns={n.name: self._conns[n.name] for n in specs},
            venvs={n.name: self._venv[n.name] for n in specs},
            src_dir=SRC_DIR,
            live_dir=live_dir,
            mounts=mounts,
        )

    def reap(self, *, run_id: str | None = None, include_live: bool = False) -> list[str]:
        """Heal and remove dead runs' traces on every node of the file.

        A run is dead when its ``owner.json`` names this machine and a process that no longer
        lives (pid and start time). A run started from another machine cannot be checked from
        here: it is left alone unless ``include_live`` (``chaos cleanup --include-live``)."""
        here = socket.gethostname()
        out: list[str] = []
        lock_out: list[list[str]] = []

        def one(c: Connection) -> None:
            lines: list[str] = []
            r = c.run(
                f'for f in {install.RUNS}/*/owner.json; do [ -e "$f" ] && '
                "{ printf '%s\\t' \"$f\"; tr -d '\\n' < \"$f\"; echo; }; done; "
                f"ls -1 {install.RUNS} 2>/dev/null | sed 's/^/dir\\t/'",
                timeout=20,
            )
            runs: dict[str, dict[str, str]] = {}
            for line in r.output.splitlines():
                path, _, rest = line.partition("\t")
                if path == "dir":
                    runs.setdefault(rest.strip(), {})
                    continue
                try:
                    meta = json.loads(rest)
                except ValueError:
                    continue
                runs[path.rsplit("/", 2)[-2]] = meta
            for rid, meta in sorted(runs.items()):
                if run_id is not None and rid != run_id:
                    continue
                mine = meta.get("host") == here
                alive = mine and owner_alive(meta.get("owner"))
                if not meta:
                    alive = False  # a folder without its owner file: a run that died starting
                elif not mine and not include_live:
                    lines.append(
                        f"left run {rid} on {c.node.name} alone: started from {meta.get('host')}, "
                        "whose orchestrator cannot be checked from here (--include-live overrides)"
                    )
                    continue
                if alive and not include_live:
                    if run_id is not None:
                        lines.append(
                            f"left run {rid} alone: its orchestrator is still running "
                            "(--include-live overrides)"
                        )
                    continue
                lines += remote.remove_run(c, rid)
            lock_out.append(lines)

        _pmap(one, list(self._conns.values()))
        for lines in lock_out:
            out += lines
        return out
