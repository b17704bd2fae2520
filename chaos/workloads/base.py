"""The Workload contract: a system to deploy, a client to drive it, checkers to judge it."""

from __future__ import annotations

from typing import Any, Protocol

from chaos.checkers.verdict import CheckResult
from chaos.histories.store import StoredRun
from chaos.orchestrator.context import RunContext


class Workload(Protocol):
    """One lab or generic workload.

    - ``preflight`` runs on the host before anything is created; it raises ``ValueError`` with a
      message for the user when the spec or the solution cannot work (a TODO left in a solution).
    - ``deploy`` installs and starts the system on the cluster; it must leave every process it starts
      registered with ``ctx.supervisor`` so that faults can find and restart them.
    - ``run_client`` performs the client ops, recording each invoke and completion in
      ``ctx.history``; it returns when the workload is done or ``ctx.stop`` is set. A timeout is
      recorded as ``info``, never as ``fail``.
    - ``recovered`` says whether the system has finished its work after the faults healed.
    - ``final_state`` reads the final state (after heal and recovery) as JSON data.
    - ``check`` is a pure function of the stored run: it must not touch the cluster.
    """

    name: str

    def preflight(self, spec: Any) -> None: ...

    def deploy(self, ctx: RunContext) -> None: ...

    def run_client(self, ctx: RunContext) -> None: ...

    def recovered(self, ctx: RunContext) -> bool: ...

    def final_state(self, ctx: RunContext) -> dict[str, Any]: ...

    def check(self, run: StoredRun) -> list[CheckResult]: ...
