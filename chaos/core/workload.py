"""The Workload contract: a system to deploy, a client to drive it, checkers to judge it.

The required part is small, as Jepsen's ``DB`` and ``Client`` are; what only some workloads can do
is an optional capability in :mod:`chaos.core.capabilities`, declared by implementing it and
asked for with ``isinstance``.
"""

from __future__ import annotations

from typing import Any, Protocol

from chaos.checkers.verdict import CheckResult
from chaos.core.context import RunContext
from chaos.core.spec import TestSpec
from chaos.histories.store import StoredRun


class Workload(Protocol):
    """One lab or generic workload, named on the command line (``chaos run lab3``).

    - ``preflight`` runs on the host before anything is created; it raises ``ValueError`` with a
      message for the user when the spec or the solution cannot work (a TODO left in a solution).
      It must not create anything.
    - ``deploy`` installs and starts the system on the cluster; it must leave every process it
      starts registered with ``ctx.supervisor`` so that faults can find and restart them.
    - ``run_client`` performs the client ops, recording each invoke and completion in
      ``ctx.history``; it returns when the workload is done or ``ctx.stop`` is set. A timeout is
      recorded as ``info``, never as ``fail``.
    - ``recovered`` says whether the system has finished its work after the faults healed; it
      must only read.
    - ``final_state`` reads the final state (after heal and recovery) as JSON data.
    - ``check`` is a pure function of the stored run: it must not touch the cluster, so that
      ``chaos check`` re-checks a stored run offline to the same verdict.
    """

    name: str

    def preflight(self, spec: TestSpec) -> None: ...

    def deploy(self, ctx: RunContext) -> None: ...

    def run_client(self, ctx: RunContext) -> None: ...

    def recovered(self, ctx: RunContext) -> bool: ...

    def final_state(self, ctx: RunContext) -> dict[str, Any]: ...

    def check(self, run: StoredRun) -> list[CheckResult]: ...
