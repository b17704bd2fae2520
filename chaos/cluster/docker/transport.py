"""A dead run's container as the reaper reaches it (the Docker backend's
:class:`~chaos.cluster.node_kit.transport.Transport`).

Everything is done from the host, as a live run does it, not by ``docker exec``: the nodes run
with every capability dropped but two (no ``NET_ADMIN`` for iptables inside), and the container's
PID 1 ignores signals it has no handler for. So commands run with ``nsenter`` in the container's
network namespace using the host's tools, processes are the host pids in the container's pid
namespace, and signals go to those host pids — only after checking, at the moment of the signal,
that the pid is still in that namespace. Thawing goes through the engine (the cgroup freezer).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import Any

import docker.errors

from chaos.cluster.base import ExecResult
from chaos.cluster.docker.procfs import pidns, pids_in
from chaos.cluster.node_kit.owner import owner_token
from chaos.cluster.node_kit.proctable import state
from chaos.cluster.node_kit.transport import Proc

LABEL_NODE = "chaos.node"


class ContainerTransport:
    """One container of a run (a Docker SDK container object); named by its ``chaos.node`` label."""

    def __init__(self, container: Any) -> None:
        self._c = container
        self.node: str = (container.labels or {}).get(LABEL_NODE) or str(container.name)
        self._init: int | None = None

    def _init_pid(self) -> int | None:
        """The host pid of the container's PID 1, None when the container is not up."""
        if self._init is None:
            try:
                self._c.reload()
            except docker.errors.APIError:  # NotFound included: removed meanwhile
                return None
            pid = int((self._c.attrs.get("State") or {}).get("Pid") or 0)
            if self._c.status in ("running", "paused") and pid > 0:
                self._init = pid
        return self._init

    def thaw(self) -> bool:
        try:
            self._c.reload()
            if self._c.status != "paused":
                return False
            self._c.unpause()
        except docker.errors.APIError:
            return False
        return True

    def exec(self, argv: Sequence[str], *, timeout: float) -> ExecResult:
        pid = self._init_pid()
        if pid is None:
            return ExecResult(1, f"{self.node}: the container is not running")
        cmd = ["nsenter", "-t", str(pid), "-n", *argv]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ExecResult(124, f"timed out after {timeout}s: {' '.join(argv)}")
        except OSError as e:
            return ExecResult(127, f"{type(e).__name__}: {e}")
        return ExecResult(p.returncode, p.stdout + p.stderr)

    def processes(self) -> list[Proc]:
        pid = self._init_pid()
        if pid is None:
            return []
        out = []
        for hp in pids_in(pid):
            letter = state(hp)
            if letter is not None:  # gone since the listing
                out.append(Proc(pid=hp, state=letter, token=owner_token(hp)))
        return out

    def signal(self, pid: int, sig: int) -> bool:
        init = self._init_pid()
        ns = pidns(pid)
        if init is None or ns is None or ns != pidns(init):
            return False  # never signal outside the run's own container
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True
