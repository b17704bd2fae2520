"""The Cluster contract.

A cluster is a set of named nodes (``n1``..``nN``) with addresses. The orchestrator, systems and
nemeses reach nodes only through this contract, so that a backend for SSH hosts or a remote Docker
engine can replace the local Docker one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ExecResult:
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class ClusterError(Exception):
    """A backend operation failed; the message says what to do about it."""


class Cluster(Protocol):
    """Named nodes and the operations a run needs on them.

    Contract:
    - every resource a backend creates is tagged with the run id, and ``teardown`` removes exactly
      those resources, never another project's; ``teardown`` is idempotent;
    - ``spawn`` starts a *named* process detached from the caller; its output goes to
      ``/var/log/chaos/<name>.log`` on the node; a second ``spawn`` of a running name is an error;
    - ``pid`` returns the process id *as the node sees it* or ``None`` when the process is gone;
    - ``signal`` delivers a signal to that process (not to the node's PID 1);
    - ``net_exec`` runs a command with the host's tools inside the node's network namespace, so
      that firewall rules apply to the node's own traffic.
    """

    run_id: str
    nodes: list[str]

    def address(self, node: str) -> str: ...

    def exec(self, node: str, argv: list[str], *, timeout: float = 60.0) -> ExecResult: ...

    def spawn(
        self, node: str, name: str, argv: list[str], *, env: dict[str, str] | None = None
    ) -> int: ...

    def pid(self, node: str, name: str) -> int | None: ...

    def signal(self, node: str, name: str, sig: int) -> int | None: ...

    def process_state(self, node: str, name: str) -> str | None: ...

    def net_exec(self, node: str, argv: list[str]) -> ExecResult: ...

    def put_file(self, node: str, path: str, data: bytes) -> None: ...

    def get_file(self, node: str, path: str) -> bytes | None: ...

    def collect_logs(self, dest: Path) -> None: ...

    def teardown(self) -> None: ...


@runtime_checkable
class Freezable(Protocol):
    """Optional capability: freeze a whole node (every process) and thaw it."""

    def freeze(self, node: str) -> None: ...

    def thaw(self, node: str) -> None: ...
