"""Reaping what a crashed orchestrator left behind.

A run killed with SIGKILL cannot heal itself; the next ``chaos run`` or ``chaos cleanup`` finds its
resources by label (only ``chaos.project=chaos``, and only runs whose orchestrator is gone: the
``chaos.owner`` label's pid and start time no longer name a live process), heals them in place,
then removes its containers and networks.

Healing in place, before removal, is the reaper every backend shares (chaos.cluster.node_kit.reap:
thaw, flush the run's chains, reset its clocks, resume stopped processes), reaching each container
through its transport (chaos.cluster.docker.transport: from the host, never outside the run's own
containers). Then the run's host chain (chaos.cluster.docker.firewall) goes with its containers;
a chain whose record names a dead orchestrator is reaped even when nothing else of its run is
left. Last, the sized tmpfs mounts of the live folders of dead orchestrators are removed, their
files kept beneath.
"""

from __future__ import annotations

from typing import Any

from chaos.cluster.docker import firewall
from chaos.cluster.docker.quota import reap_mounts
from chaos.cluster.docker.resources import (
    LABEL_LIVE,
    LABEL_RUN,
    list_containers,
    live_of,
    orphaned_runs,
    remove_run,
    run_filter,
)
from chaos.cluster.docker.transport import ContainerTransport
from chaos.cluster.node_kit import reap as node_reap

# the undo ops of faults.json entries this backend's reaper carries out (see the fault table): all
# of the shared reaper's — containers thaw, and the run's live folder is on this machine
HANDLED_OPS = node_reap.OPS


def heal_in_place(client: Any, run_id: str, live: str | None) -> list[str]:
    """Undo a dead run's faults on its still-existing containers; returns what it did."""
    nodes = [ContainerTransport(c) for c in list_containers(client, run_filter(run_id))]
    return node_reap.heal(run_id, nodes, live=live)


def reap(client: Any, *, run_id: str | None = None, include_live: bool = False) -> list[str]:
    """Heal and remove the resources of dead runs (of ``run_id`` only, when given).

    A run whose orchestrator is alive is left alone unless ``include_live``: it is another
    terminal's run (or another engineer's), and it heals itself.
    """
    orphans = orphaned_runs(client)
    # host rules whose orchestrator is gone, also when its containers and network are gone already
    for left in firewall.leftovers():
        orphans.setdefault(left, None)
    if include_live and run_id is None:
        targets: dict[str, str | None] = dict.fromkeys(firewall.all_runs())
        for c in list_containers(client, run_filter()):
            rid = (c.labels or {}).get(LABEL_RUN)
            if rid:
                targets.setdefault(rid, (c.labels or {}).get(LABEL_LIVE))
        for n in client.networks.list(filters=run_filter()):
            rid = (n.attrs.get("Labels") or {}).get(LABEL_RUN)
            if rid:
                targets.setdefault(rid, None)
    elif run_id is not None:
        if run_id not in orphans and not include_live:
            if live_of(client, run_id) is None:
                return []
            return [
                f"left run {run_id} alone: its orchestrator is still running "
                "(--include-live overrides)"
            ]
        targets = {run_id: orphans.get(run_id) or live_of(client, run_id)}
    else:
        targets = dict(orphans)
    out: list[str] = []
    for rid, live in sorted(targets.items()):
        try:
            out += heal_in_place(client, rid, live)
        except Exception as e:  # removal below still ends every fault of the run
            out.append(f"could not heal run {rid} in place ({type(e).__name__}: {e})")
        out += [f"removed {r}" for r in remove_run(client, rid)]
    # the sized tmpfs mounts of the live folders of orchestrators that are gone (also those that
    # died before their containers existed, or after they were removed)
    out += reap_mounts()
    return out
