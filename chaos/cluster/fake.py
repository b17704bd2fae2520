"""An in-memory cluster for testing the framework itself (Jepsen's atom-db idea).

Processes are records, signals change their state, files live in a dict. Nothing here touches a
real node: it exists so that the supervisor, the fault ledger and the nemeses can be tested without
Docker. It must never stand in for a real system in a lab scenario.
"""

from __future__ import annotations

import itertools
import signal as sig
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cluster.base import ClusterError, ExecResult, node_names


@dataclass(slots=True)
class FakeProcess:
    name: str
    argv: list[str]
    env: dict[str, str]
    pid: int
    state: str = "S"  # S running (sleeping), T stopped, None once dead
    user: str | None = None
    signals: list[int] = field(default_factory=list)
    pending_stop: bool = False  # a SIGSTOP sent while its node was frozen


class FakeCluster:
    def __init__(self, run_id: str = "fake", nodes: int = 3) -> None:
        self.run_id = run_id
        self.nodes = node_names(nodes)
        self.procs: dict[tuple[str, str], FakeProcess] = {}
        self.files: dict[tuple[str, str], bytes] = {}
        self.net_log: list[tuple[str, list[str]]] = []
        self.spawned: list[tuple[str, str, int]] = []
        self.torn_down = False
        self.started = False
        self.frozen: set[str] = set()
        self._pids = itertools.count(100)
        self._lock = threading.Lock()

    def start(self) -> None:
        self.started = True

    def address(self, node: str) -> str:
        return f"{node}.fake.invalid"  # never dialled: a label only

    def exec(self, node: str, argv: list[str], *, timeout: float = 60.0) -> ExecResult:
        return ExecResult(0, "")

    def spawn(
        self,
        node: str,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> int:
        with self._lock:
            if self.pid(node, name) is not None:
                raise ClusterError(f"{name} is already running on {node}")
            p = FakeProcess(name=name, argv=argv, env=env or {}, pid=next(self._pids), user=user)
            self.procs[(node, name)] = p
            self.spawned.append((node, name, p.pid))
            return p.pid

    def crash(self, node: str, name: str) -> None:
        """Test helper: the process exits on its own."""
        self.procs[(node, name)].state = "X"

    def pid(self, node: str, name: str) -> int | None:
        p = self.procs.get((node, name))
        return p.pid if p is not None and p.state not in ("X", "Z") else None

    def signal(self, node: str, name: str, signum: int) -> int | None:
        p = self.procs.get((node, name))
        if p is None or p.state in ("X", "Z"):
            return None
        p.signals.append(signum)
        if node in self.frozen and signum in (sig.SIGSTOP, sig.SIGCONT):
            # as the kernel does: a frozen process takes the signal at the thaw
            p.pending_stop = signum == sig.SIGSTOP
            if signum == sig.SIGCONT and p.state == "T":
                p.state = "S"
        elif signum == sig.SIGSTOP:
            p.state = "T"
        elif signum == sig.SIGCONT:
            p.state = "S"
        elif signum in (sig.SIGKILL, sig.SIGTERM):
            p.state = "X"
        return p.pid

    def process_state(self, node: str, name: str) -> str | None:
        p = self.procs.get((node, name))
        if p is None or p.state == "X":
            return None
        return "D" if node in self.frozen else p.state  # a frozen process shows D (cgroup v1)

    def net_exec(self, node: str, argv: list[str]) -> ExecResult:
        self.net_log.append((node, argv))
        return ExecResult(0, "")

    def put_file(self, node: str, path: str, data: bytes) -> None:
        self.files[(node, path)] = data

    def get_file(self, node: str, path: str) -> bytes | None:
        return self.files.get((node, path))

    def collect_logs(self, dest: Path) -> None:
        pass

    def freeze(self, node: str) -> None:
        self.frozen.add(node)

    def thaw(self, node: str) -> None:
        self.frozen.discard(node)
        for (n, _), p in self.procs.items():
            if n == node and p.pending_stop:
                p.state, p.pending_stop = "T", False

    def freezer_state(self, node: str) -> str | None:
        return "FROZEN" if node in self.frozen else "THAWED"

    def reap_handle(self, node: str, process: str | None = None) -> str | None:
        if process is None:
            return f"fake-{self.run_id}-{node}"
        pid = self.pid(node, process)
        return None if pid is None else f"{pid}:fake"

    def teardown(self) -> None:
        self.torn_down = True


class FakeBackend:
    """A backend of in-memory clusters: what the orchestrator's own unit tests run on.

    ``clusters`` keeps every cluster it made, so a test can look at what a run did to its nodes.
    ``reaped`` counts calls to ``reap``; nothing is ever left to reap.
    """

    name = "fake"

    def __init__(self) -> None:
        self.clusters: list[FakeCluster] = []
        self.reaped = 0

    def prepare(self, progress: Callable[[str], None]) -> dict[str, str]:
        return {"backend": "fake"}

    def reap(self, *, run_id: str | None = None, include_live: bool = False) -> list[str]:
        self.reaped += 1
        return []

    def make_cluster(
        self, *, run_id: str, nodes: int, live_dir: Path, mounts: dict[str, str]
    ) -> FakeCluster:
        c = FakeCluster(run_id=run_id, nodes=nodes)
        self.clusters.append(c)
        return c
