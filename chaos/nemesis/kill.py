"""``kill``: SIGKILL processes (one, or a node's whole system), restart them when the fault heals.

The supervisor restarts any process that dies; a kill first *holds* the process in the supervisor
so that it stays down for the fault's duration, and the heal releases it (the restart). Data
directories live in the container and survive: etcd restarts from ``/data/etcd`` and rejoins, the
JetStream broker restarts from its file store ``/data/nats`` with its streams and consumers, as the
lab promises ("one file-store broker survives a process stop with its volume kept").
"""

from __future__ import annotations

import signal
import time
from typing import Any

from chaos.core.context import RunContext
from chaos.core.target import Resolved
from chaos.nemesis.hostkill import EXIT_WAIT, RESTART_WAIT
from chaos.nemesis.targets import TargetedFault, processes_of


class KillFault(TargetedFault):
    """SIGKILL every target process; the undo restarts them in start order and checks they run.

    A fault that ends processes with another signal is this one with its own ``name`` and
    ``signum`` (and a row saying ``dies``)."""

    name = "kill"
    signum: signal.Signals = signal.SIGKILL

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        procs = [t for t in processes_of(ctx, resolved.targets) if t.process]
        if not procs:
            raise RuntimeError(f"{self.name} {resolved.spec}: no process to end")

        def apply() -> list[dict[str, Any]]:
            out = []
            for t in procs:
                name = t.process or ""
                ctx.supervisor.hold(t.node, name)
                pid = ctx.cluster.signal(t.node, name, self.signum)
                deadline = time.monotonic() + EXIT_WAIT
                while ctx.cluster.pid(t.node, name) is not None and time.monotonic() < deadline:
                    time.sleep(0.01)
                if ctx.cluster.pid(t.node, name) is not None:
                    raise RuntimeError(
                        f"{name} on {t.node} (pid {pid}) survived {self.signum.name}"
                    )
                out.append(
                    {**t.to_json(), "pid": pid, "signal": self.signum.name, "running": False}
                )
            return out

        def undo() -> list[dict[str, Any]]:
            out = []
            for t in procs:
                name = t.process or ""
                try:
                    new = ctx.supervisor.release(t.node, name)
                except Exception as e:  # the node may be frozen; the supervisor retries later
                    out.append(
                        {**t.to_json(), "restarted": False, "error": f"{type(e).__name__}: {e}"}
                    )
                    continue
                deadline = time.monotonic() + RESTART_WAIT
                pid = ctx.cluster.pid(t.node, name)
                while pid is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                    pid = ctx.cluster.pid(t.node, name)
                if pid is None:
                    raise RuntimeError(f"{name} on {t.node} did not restart")
                out.append({**t.to_json(), "pid": pid, "restarted": new is not None})
            return out

        return ctx.faults.start(
            self.name,
            apply,
            undo,
            intent=intent or {"target": resolved.spec},
            trigger=trigger,
            # nothing to heal from outside: removing the container ends the story
            extra={"reap": []},
        )
