"""Reaping what a crashed orchestrator left behind.

A run killed with SIGKILL cannot heal itself; the next ``chaos run`` or ``chaos cleanup`` finds its
resources by label (only ``chaos.project=chaos``, and only runs whose orchestrator is gone: the
``chaos.owner`` label's pid and start time no longer name a live process), heals in place what
the run's ``<live>/faults.json`` lists, then removes its containers and networks.

Healing in place, before removal, matters for whoever looks at a crashed run's nodes (and for a
backend whose nodes outlive the run, like SSH hosts): frozen containers are thawed, the run's own
iptables chain is flushed in each node's namespace (partitions and lossy links), every clock file
of the run is put back to the true time, SIGSTOPped processes get SIGCONT. The same is
done for any stopped process or leftover chain that faults.json missed (the orchestrator may have
died between a signal and the record), but only inside the run's own containers. Then the run's
host chain (chaos.cluster.docker.firewall) goes with its containers; a chain whose record names a
dead orchestrator is reaped even when nothing else of its run is left. Last, the sized tmpfs
mounts of the live folders of dead orchestrators are removed, their files kept beneath.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import docker.errors

from chaos.cluster import clocks
from chaos.cluster.docker import firewall
from chaos.cluster.docker.procfs import pidns, pids_in
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
from chaos.cluster.net import chain_name
from chaos.cluster.node_kit import undo
from chaos.cluster.node_kit.owner import owner_alive
from chaos.cluster.node_kit.proctable import state
from chaos.cluster.node_kit.undo import UndoOp

# the undo ops of faults.json entries this reaper knows how to carry out (see the fault table)
HANDLED_OPS = frozenset({UndoOp.SIGCONT, UndoOp.THAW, UndoOp.IPTABLES_FLUSH, UndoOp.CLOCK_RESET})


def heal_in_place(client: Any, run_id: str, live: str | None) -> list[str]:
    """Undo a dead run's faults on its still-existing containers; returns what it did."""
    containers = {c.name: c for c in list_containers(client, run_filter(run_id))}
    done: list[str] = []
    recorded = undo.recorded(live)
    # 1. thaw: a frozen container's processes cannot act on SIGCONT or anything else
    for c in containers.values():
        with contextlib.suppress(docker.errors.APIError):
            c.reload()
            if c.status == "paused":
                c.unpause()
                done.append(f"healed: thawed {c.name}")
    running = {}
    for name, c in containers.items():
        with contextlib.suppress(docker.errors.APIError):
            c.reload()
            pid = int(c.attrs["State"]["Pid"] or 0)
            if c.status == "running" and pid > 0:
                running[name] = pid
    # 2. flush the run's chain in every node's namespace (the chain name is the run's own)
    chains = {chain_name(run_id)} | {
        r["chain"]
        for r in undo.entries(recorded, UndoOp.IPTABLES_FLUSH)
        if r.get("chain", "").startswith("CHAOS-")
    }
    for name, pid in sorted(running.items()):
        for chain in sorted(chains):
            p = subprocess.run(
                ["nsenter", "-t", str(pid), "-n", "iptables", "-w", "5", "-S", chain],
                capture_output=True,
                text=True,
                timeout=30,
            )
            if p.returncode != 0:
                continue  # no such chain there: nothing was cut on this node
            rules = [ln for ln in p.stdout.splitlines() if ln.startswith("-A")]
            subprocess.run(
                ["nsenter", "-t", str(pid), "-n", "iptables", "-w", "5", "-F", chain],
                capture_output=True,
                timeout=30,
            )
            if rules:
                done.append(f"healed: flushed {chain} ({len(rules)} rule(s)) in {name}")
    # 3. clocks back to the true time: every file of the run's clock folder (faults.json's
    # clock-reset entries name files there; any other file there is reset too)
    if live:
        done += [f"healed: reset the clock of {name}" for name in clocks.reset_all(Path(live))]
    # 4. resume stopped processes: first those faults.json names, then any other in the run's nodes
    namespaces = {pidns(pid): name for name, pid in running.items()}
    resumed: set[int] = set()
    for r in undo.entries(recorded, UndoOp.SIGCONT):
        token = r.get("token")
        if not owner_alive(token):
            continue  # gone, or the pid now names another process
        hp = int(str(token).split(":", 1)[0])
        if pidns(hp) not in namespaces:
            continue  # never signal outside the run's own containers
        with contextlib.suppress(ProcessLookupError):
            os.kill(hp, signal.SIGCONT)
            resumed.add(hp)
            done.append(f"healed: resumed {r.get('process')} on {r.get('node')} (host pid {hp})")
    for name, pid in sorted(running.items()):
        for hp in pids_in(pid):
            if hp not in resumed and state(hp) == "T":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(hp, signal.SIGCONT)
                    done.append(f"healed: resumed stopped host pid {hp} in {name}")
    return done


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
