"""The one table of fault kinds: a fault is its row.

Adding a fault is one module with a :class:`~chaos.nemesis.base.Fault` class plus one row here
(and the row's import). Everything else reads the row: ``--nemesis`` and its help, schedule files,
trigger phrases (which faults they take, whether a triggered firing waits for the held process to
answer its release, what the firing aims at), the history's start ops (the row's ``verb`` and
``colour``, which the checkers' fault descriptions and the report's bands read, see
:func:`recorded`) and the reapers (``undo``, checked against each backend's ``HANDLED_OPS``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chaos.cluster.base import Freezable, SharedLive
from chaos.cluster.node_kit.undo import UndoOp
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


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultKind:
    """One fault kind: everything chaos needs to know about it besides its module."""

    name: str
    # the workload -> the fault (roles resolve through the workload)
    make: Callable[[Workload | None], Fault]
    help: str
    # past tense, as a fault description says it: "n1's worker paused at 2.60 s for 5.0 s"
    verb: str
    # the colour of its bands in the report's plots, timeline and sequence diagrams
    colour: str
    # the ``op`` its ledger entries carry in ``faults.json`` so that a backend's reaper can undo
    # it after the orchestrator died (the reaper's step for it: chaos.cluster.node_kit.reap.STEPS);
    # None: nothing outlives the fault that removing the run's nodes does not end
    undo: UndoOp | None
    # the faulted process ends: nothing is left to answer a trigger's release, and a write held
    # before it never left the process (the proxy drops it)
    dies: bool = False
    # the faulted process stops and goes on later, its memory whole (a lease it held ran out
    # meanwhile: lab1's unsafe-lease reads these stops)
    stops: bool = False
    # what a trigger's firing faults: the process that reached the point, or its node cut off
    aim: Literal["process", "node"] = "process"
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
    # the code under test must start with libfaketime preloaded for it to work (chaos.cluster.clocks)
    moves_clocks: bool = False


KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        name="pause",
        make=PauseFault,
        help="SIGSTOP processes, then SIGCONT (a GC pause)",
        verb="paused",
        colour="#f4a261",
        undo=UndoOp.SIGCONT,
        stops=True,
    ),
    FaultKind(
        name="freeze",
        make=FreezeFault,
        help="freeze whole nodes (cgroup freezer), then thaw",
        verb="frozen",
        colour="#e9c46a",
        undo=UndoOp.THAW,
        needs=Freezable,
        stops=True,
    ),
    FaultKind(
        name="kill",
        make=KillFault,
        help="SIGKILL processes, restart them at heal",
        verb="killed",
        colour="#e76f51",
        undo=None,
        dies=True,
    ),
    FaultKind(
        name="partition",
        make=PartitionFault,
        help="cut the network (DROP rules), verified",
        verb="partitioned",
        colour="#6baed6",
        undo=UndoOp.IPTABLES_FLUSH,
        aim="node",
        targets_in=_partition,
    ),
    FaultKind(
        name="clock",
        make=ClockFault,
        help="move service processes' wall clocks (libfaketime): clock:bump|skew|strobe|drift[=Δ]"
        "[:target]",
        verb="clock moved",
        colour="#a1d99b",
        undo=UndoOp.CLOCK_RESET,
        # the clock files live in the run's live folder, which only nodes that mount it see
        needs=SharedLive,
        targets_in=_clock,
        moves_clocks=True,
    ),
    FaultKind(
        name="hold",
        make=HoldFault,
        help="with a write or read trigger only: the etcd proxy holds the call, no signal (a slow "
        "call)",
        verb="held at the etcd proxy",
        colour="#bcbddc",
        undo=None,
        scheduled=False,
    ),
    FaultKind(
        name="packet-loss",
        make=PacketLossFault,
        help="drop a fraction of packets (iptables statistic), measured: "
        "packet-loss[:P%][:n1+n2|n1>n2]",
        verb="lossy",
        colour="#fdae6b",
        undo=UndoOp.IPTABLES_FLUSH,
        triggerable=False,
        targets_in=_loss,
        roles=False,
    ),
)

FAULTS: tuple[str, ...] = tuple(k.name for k in KINDS if k.scheduled)
BY_NAME: dict[str, FaultKind] = {k.name: k for k in KINDS}
TRIGGER_FAULTS: tuple[str, ...] = tuple(k.name for k in KINDS if k.triggerable)
NEEDS: dict[str, type] = {k.name: k.needs for k in KINDS if k.needs is not None}
REAP_OPS: frozenset[UndoOp] = frozenset(k.undo for k in KINDS if k.undo)


def fault_table(workload: Workload | None) -> dict[str, Fault]:
    """Every fault kind, ready to resolve targets through ``workload``."""
    return {k.name: k.make(workload) for k in KINDS}


def help_text() -> str:
    return "; ".join(f"{k.name}: {k.help}" for k in KINDS)


def recorded() -> dict[str, dict[str, Any]]:
    """What the history's start ops of each kind carry besides its name (the ledger adds it): how
    the checkers describe the fault and the report colours it, read from the run's own record
    (they sit below this table, and a stored run is read the same way years later)."""
    return {
        k.name: {
            "verb": k.verb,
            "colour": k.colour,
            "stops": k.stops,
            "moves_clocks": k.moves_clocks,
        }
        for k in KINDS
    }
