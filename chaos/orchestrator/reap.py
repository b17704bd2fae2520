"""Reaping what a crashed orchestrator left behind.

A run killed with SIGKILL cannot heal itself; the next ``chaos run`` or ``chaos cleanup`` finds its
resources by label (only chaos's own, and only of runs whose orchestrator is gone), heals the faults
recorded in its ``faults.json`` where the backend can still reach them, then removes containers and
networks. Removing a container also ends its stopped processes and drops the firewall rules that
lived in its network namespace.
"""

from __future__ import annotations

from typing import Any

from chaos.cluster.docker import orphaned_runs, remove_run


def reap(client: Any, *, run_id: str | None = None, include_live: bool = False) -> list[str]:
    if run_id is not None:
        targets = [run_id]
    elif include_live:
        targets = [None]  # type: ignore[list-item]
    else:
        targets = list(orphaned_runs(client))
    removed: list[str] = []
    for rid in targets:
        removed += remove_run(client, rid)
    return removed
