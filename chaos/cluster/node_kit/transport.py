"""How the reaper reaches one node of a dead run: the little each backend must provide so that one
reaper (:mod:`chaos.cluster.node_kit.reap`) heals every backend's nodes — Jepsen's ``control``
remote idea, cut down to what healing needs: run a command as root in the node's network, read
the run's processes, send a signal, and (where a backend can freeze nodes) thaw.

A transport serves a reaper, which runs when something already went wrong: the node may be
gone, half gone, unreachable or frozen. So no method raises for that; each says "nothing" (a
failed :class:`~chaos.cluster.base.ExecResult`, an empty list, False) and the reaper goes on with
the other nodes and the other undo steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chaos.cluster.base import ExecResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Proc:
    """One process of the run on a node, as its process table shows it now.

    ``pid`` is what :meth:`Transport.signal` takes (a host pid for Docker, the node's pid over
    SSH); ``state`` the leader's state letter (``T``: stopped); ``name`` the run's name for it when
    the backend knows one; ``token`` the handle a fault wrote into the ledger for this very
    process (``Reapable.reap_handle``), so that the reaper can name a process the ledger names."""

    pid: int
    state: str
    name: str | None = None
    token: str | None = None


class Transport(Protocol):
    """One node of a dead run, as the reaper reaches it.

    - ``node`` names the node in the reaper's report (``n2``).
    - ``exec`` runs ``argv`` as root in the node's network namespace (where partitions and lossy
      links put their rules) and returns its exit code and output. It must not raise: a node that
      is gone or unreachable, or a command that times out after ``timeout`` seconds, is a failed
      result (exit code not 0, the reason in the output).
    - ``processes`` lists the run's processes on the node now — never anything outside the node,
      never another run's — or nothing when the node is gone. It must not raise.
    - ``signal`` sends ``sig`` to a pid of ``processes`` and says whether it was delivered (False
      when the process is gone). It must not raise, and must never reach a process outside the
      node.
    """

    node: str

    def exec(self, argv: Sequence[str], *, timeout: float) -> ExecResult: ...

    def processes(self) -> list[Proc]: ...

    def signal(self, pid: int, sig: int) -> bool: ...


@runtime_checkable
class Thawing(Protocol):
    """Optional: a transport of a backend that can freeze a whole node (the cgroup freezer).

    ``thaw`` unfreezes the node if it is frozen and says whether it was; a frozen node's
    processes cannot act on anything else the reaper does, so the reaper thaws first. It must not
    raise (a gone node: False)."""

    def thaw(self) -> bool: ...
