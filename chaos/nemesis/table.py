"""The one table of fault kinds: ``--nemesis`` help, schedules, triggers and reaping derive from it.

Adding a fault is one module with a :class:`~chaos.nemesis.base.Fault` class plus one line here.
``reap`` names the ``op`` its ledger entries carry in ``faults.json`` so that a backend's reaper can
undo it after the orchestrator died (None: removing the run's nodes undoes it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chaos.cluster.base import Freezable, SharedLive
from chaos.core.workload import Workload
from chaos.nemesis import clock, loss
from chaos.nemesis.base import Fault
from chaos.nemesis.clock import ClockFault
from chaos.nemesis.freeze import FreezeFault
from chaos.nemesis.grudge import SHAPES
from chaos.nemesis.hold import HoldFault
from chaos.nemesis.kill import KillFault
from chaos.nemesis.loss import PacketLossFault
from chaos.nemesis.partition import PartitionFault
from chaos.nemesis.pause import PauseFault


def _whole(spec: str) -> Sequence[str]:
    return [spec]


def _partition(spec: str) -> Sequence[str]:
    return [] if spec in SHAPES else [spec]


def _clock(spec: str) -> Sequence[str]:
    target = clock.parse(spec).target
    return [target] if target else []


def _loss(spec: str) -> Sequence[str]:
    _, target = loss.parse(spec)
    return target.split(">")


@dataclass(frozen=True, slots=True)
class FaultKind:
    name: str
    make: Callable[
        [Workload | None], Fault
    ]  # the workload -> the fault (roles resolve through the workload)
    help: str
    reap: str | None
    triggerable: bool = True
    # an optional Cluster capability the fault cannot work without (refused before a run on a
    # backend that says it lacks it, see chaos.cluster.base.Capable)
    needs: type | None = None
    # the target specs (chaos.nemesis.targets) inside the fault's argument, checked against the
    # workload before a run starts; raises ValueError for an argument that does not parse
    targets_in: Callable[[str], Sequence[str]] = _whole
    # whether those targets may name roles, or only nodes
    roles: bool = True
    # whether --nemesis and a schedule may name it, or only a write or read trigger (hold)
    scheduled: bool = True


KINDS: tuple[FaultKind, ...] = (
    FaultKind("pause", PauseFault, "SIGSTOP processes, then SIGCONT (a GC pause)", "sigcont"),
    FaultKind(
        "freeze",
        FreezeFault,
        "freeze whole nodes (cgroup freezer), then thaw",
        "thaw",
        needs=Freezable,
    ),
    FaultKind("kill", KillFault, "SIGKILL processes, restart them at heal", None),
    FaultKind(
        "partition",
        PartitionFault,
        "cut the network (DROP rules), verified",
        "iptables-flush",
        targets_in=_partition,
    ),
    FaultKind(
        "clock",
        ClockFault,
        "move service processes' wall clocks (libfaketime): clock:bump|skew|strobe|drift[=Δ]"
        "[:target]",
        "clock-reset",
        # the clock files live in the run's live folder, which only nodes that mount it see
        needs=SharedLive,
        targets_in=_clock,
    ),
    FaultKind(
        "hold",
        HoldFault,
        "with a write or read trigger only: the etcd proxy holds the call, no signal (a slow call)",
        None,
        scheduled=False,
    ),
    FaultKind(
        "packet-loss",
        PacketLossFault,
        "drop a fraction of packets (iptables statistic), measured: packet-loss[:P%][:n1+n2|n1>n2]",
        "iptables-flush",
        triggerable=False,
        targets_in=_loss,
        roles=False,
    ),
)

FAULTS: tuple[str, ...] = tuple(k.name for k in KINDS if k.scheduled)
BY_NAME: dict[str, FaultKind] = {k.name: k for k in KINDS}
TRIGGER_FAULTS: tuple[str, ...] = tuple(k.name for k in KINDS if k.triggerable)
NEEDS: dict[str, type] = {k.name: k.needs for k in KINDS if k.needs is not None}
REAP_OPS: frozenset[str] = frozenset(k.reap for k in KINDS if k.reap)


def fault_table(workload: Workload | None) -> dict[str, Fault]:
    """Every fault kind, ready to resolve targets through ``workload``."""
    return {k.name: k.make(workload) for k in KINDS}


def help_text() -> str:
    return "; ".join(f"{k.name}: {k.help}" for k in KINDS)
