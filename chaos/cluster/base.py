"""The Cluster contract.

A cluster is a set of named nodes (``n1``..``nN``) with addresses. The orchestrator, systems and
nemeses reach nodes only through this contract, so that a backend for SSH hosts or a remote Docker
engine can replace the local Docker one. A :class:`Backend` makes clusters and owns what lies
around them (checking its engine, building its node image, reaping a crashed run's leftovers);
the orchestrator receives one by name (``--backend docker``) and never names a backend itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ExecResult:
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def node_name(i: int) -> str:
    """The name of a cluster's ``i``-th node (from 1): ``n1``, ``n2``, ... Every backend names its
    nodes so, and targets, control folders and messages speak of them so."""
    return f"n{i}"


def node_names(count: int) -> list[str]:
    """The names of a cluster of ``count`` nodes, in order: ``n1``..``nN``."""
    return [node_name(i) for i in range(1, count + 1)]


class ClusterError(Exception):
    """A backend operation failed; the message says what to do about it."""


class Cluster(Protocol):
    """Named nodes and the operations a run needs on them.

    Contract:
    - ``start`` creates and starts the nodes; if it fails, ``teardown`` still removes whatever it
      created;
    - every resource a backend creates is tagged with the run id, and ``teardown`` removes exactly
      those resources, never another project's; ``teardown`` is idempotent;
    - ``spawn`` starts a *named* process detached from the caller; its output goes to
      ``/var/log/chaos/<name>.log`` on the node; a second ``spawn`` of a running name is an error;
      with ``user`` (a name or ``uid[:gid]``) the process runs as that unprivileged user, which
      must not be able to regain privileges (the code under test runs so);
    - ``pid`` returns the process id *as the node sees it* or ``None`` when the process is gone;
    - ``signal`` delivers a signal to that process (not to the node's PID 1);
    - ``net_exec`` runs a command with the host's tools inside the node's network namespace, so
      that firewall rules apply to the node's own traffic.
    """

    run_id: str
    nodes: list[str]

    def start(self) -> None: ...

    def address(self, node: str) -> str: ...

    def exec(self, node: str, argv: list[str], *, timeout: float = 60.0) -> ExecResult: ...

    def spawn(
        self,
        node: str,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
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
    """Optional capability: freeze a whole node (every process) and thaw it.

    ``freezer_state`` is what the kernel reports for the node (``FROZEN``, ``FREEZING``,
    ``THAWED``), or None when the backend cannot tell; it is how the fault verifies itself."""

    def freeze(self, node: str) -> None: ...

    def thaw(self, node: str) -> None: ...

    def freezer_state(self, node: str) -> str | None: ...


@runtime_checkable
class SharedLive(Protocol):
    """Optional capability: the nodes see the run's live folder itself (a bind mount), so a file
    the orchestrator writes there reaches the services at once (a process's clock, for
    ``clock`` faults). ``live_path`` is where the nodes see it."""

    def live_path(self) -> str: ...


@runtime_checkable
class SocketOwners(Protocol):
    """Optional capability: tell, from outside the node, which of its named processes (or a
    process below one of them) holds a loopback TCP connection from ``local_port`` to
    ``remote_port`` — how a write held by the node's etcd proxy is traced to the process that
    sent it, with no word from that process. Returns the name, or None when none of ``names``
    holds it (the connection closed, or a process outside them). Must only look."""

    def socket_owner(
        self, node: str, names: Sequence[str], local_port: int, remote_port: int
    ) -> str | None: ...


@runtime_checkable
class Sized(Protocol):
    """Optional capability: the paths the code under test can write have sizes, and the cluster
    can tell which of them it filled.

    ``over_quota`` names each sized path that is full (or all but full) right now, in words fit
    for a verdict ("/tmp on n2 (64 MiB)"), or [] when none is; it must only look, never free
    space or stop anything, and it must be cheap enough to call twice a second."""

    def over_quota(self) -> list[str]: ...


@runtime_checkable
class Reapable(Protocol):
    """Optional capability: name a node or process so that the backend's reaper can heal it after
    the orchestrator died (resume a stopped process, thaw a node).

    ``reap_handle(node, process)`` returns a handle that stays valid only as long as that very
    process lives (a pid alone could be reused), or None when the process is not running. Faults
    write it into the ledger *before* they act."""

    def reap_handle(self, node: str, process: str | None = None) -> str | None: ...


@runtime_checkable
class ControlChannel(Protocol):
    """Optional capability: the nodes do not see the orchestrator's control folder, so fault
    points and holds written there must be copied to them (the SSH backend; Docker bind-mounts
    the folder and needs none of this).

    ``folder`` is ``any`` (every node's services read it) or a node name.

    - ``control_put`` makes ``name`` appear whole (never half-written) where the services of
      ``folder`` read it. A point in ``any`` must be claimable *exactly once* across all nodes, as
      a rename in one shared folder is: it may not simply be copied to every node (two nodes
      would each claim their copy). ``on`` names the one node that must see it (a hold's release,
      for the process held there).
    - ``control_remove`` removes it wherever it is (missing is fine) and stops any copying.
    - ``control_exists`` says whether ``name`` is still in ``folder`` as node ``node`` sees it (a
      service consumes a release by removing it).
    """

    def control_put(
        self, folder: str, name: str, data: bytes, *, on: str | None = None
    ) -> None: ...

    def control_remove(self, folder: str, name: str) -> None: ...

    def control_exists(self, node: str, folder: str, name: str) -> bool: ...


def control_channel(cluster: Cluster) -> ControlChannel | None:
    """How fault points and holds reach ``cluster``'s nodes: its :class:`ControlChannel` when the
    nodes do not see the orchestrator's control folder, else None (they read the folder itself).
    Asked once, when the run's context is made."""
    return cluster if isinstance(cluster, ControlChannel) else None


@runtime_checkable
class Capable(Protocol):
    """Optional capability of a :class:`Backend`: say *before any cluster exists* whether its
    clusters will have an optional capability (``supports(Freezable)``), so that a fault the
    backend cannot do is refused before the run starts, not halfway through it. A backend
    without it is asked nothing; its faults fail when applied."""

    def supports(self, capability: type) -> bool: ...


@runtime_checkable
class GivenMachines(Protocol):
    """Optional capability of a :class:`Backend`: its nodes are machines it was given (the SSH
    backend's nodes file), so a run takes all of them unless the command names as many.
    ``machines``: how many; ``given_by``: where they are named, for an error."""

    @property
    def machines(self) -> int: ...

    @property
    def given_by(self) -> str: ...


class Backend(Protocol):
    """Where clusters come from: the local Docker engine, SSH hosts, a fake for tests.

    - ``prepare`` checks that the backend can work (engine up, image built, hosts reachable) and
      returns the versions worth storing with the run; it raises :class:`ClusterError` with what
      to do, and must not create a cluster.
    - ``reap`` heals and removes what runs whose orchestrator is gone left behind (of ``run_id``
      only, when given; also live runs with ``include_live``), returning one line per action. It
      must never touch anything it did not create.
    - ``make_cluster`` returns an unstarted :class:`Cluster` for one run; ``mounts`` are host
      folders to show read-only inside every node (a solution), by their path inside.
    """

    name: str

    def prepare(self, progress: Progress) -> dict[str, str]: ...

    def reap(self, *, run_id: str | None = None, include_live: bool = False) -> list[str]: ...

    def make_cluster(
        self, *, run_id: str, nodes: int, live_dir: Path, mounts: dict[str, str]
    ) -> Cluster: ...
