"""Nemesis intervals as the report draws them: bands over the checkers' fault intervals.

The intervals are worked out once, in :func:`chaos.checkers.faults.fault_intervals` (starts
paired with heals by ``fault_id``, a heal without one healing everything); this module only
gives them an end on the page — a fault never healed runs to the end of the run and is marked
open, because that is exactly what a reader must notice — and their colours: the one each start
op recorded (its fault's row in chaos's fault table), else one of the fallbacks here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.checkers.faults import RECORDED_BEFORE, FaultInterval, NemesisOp, fault_intervals

# A fault's colour is its row's, recorded with it, and shared by the plots, the timeline and the
# sequence diagrams so a reader learns them once. What recorded none: the old records' colours,
# then the purple for lab fault points, and for anything else (a Jepsen nemesis op) a colour of its
# own name's.
FAULT_POINT_COLOUR = "#b39ddb"
OTHER_COLOURS = ("#a1d99b", "#fdae6b", "#bcbddc", "#c7e9c0", "#fdd0a2")


def fault_colour(kind: str, recorded: str | None = None) -> str:
    found = recorded or RECORDED_BEFORE.get(kind, (kind, None))[1]
    if found:
        return found
    if "-" in kind:  # lab fault points are hyphenated names (relay-crash-before-publish)
        return FAULT_POINT_COLOUR
    return OTHER_COLOURS[sum(map(ord, kind)) % len(OTHER_COLOURS)]


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultBand:
    fault_id: str
    fault: str
    start: float
    end: float
    open: bool
    nodes: tuple[str, ...] = ()
    process: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    recorded_colour: str | None = None

    @property
    def colour(self) -> str:
        return fault_colour(self.fault, self.recorded_colour)

    @property
    def target(self) -> str:
        where = ",".join(self.nodes)
        if self.process and where:
            return f"{self.process}@{where}"
        # "" when the nemesis op named neither (a lab's fault point fires wherever it is hit):
        # a reader is better served by no target than by "txn-error-complete ?"
        return where or self.process or ""

    @property
    def label(self) -> str:
        sig = self.detail.get("signal")
        extra = f" ({sig})" if sig else ""
        return " ".join(x for x in (self.fault, self.target) if x) + extra

    def overlaps(self, t0: float, t1: float) -> bool:
        return self.start <= t1 and self.end >= t0


def band(interval: FaultInterval, end_time: float) -> FaultBand:
    """The band of one interval; an open one runs to ``end_time``."""
    end = interval.end if interval.end is not None else max(end_time, interval.start)
    return FaultBand(
        fault_id=str(interval.fault_id),
        fault=interval.fault,
        start=interval.start,
        end=end,
        open=interval.end is None,
        nodes=interval.nodes,
        process=interval.process,
        detail=interval.detail,
        recorded_colour=interval.colour,
    )


def fault_bands(history: Sequence[NemesisOp], end_time: float) -> list[FaultBand]:
    return [band(iv, end_time) for iv in fault_intervals(history)]
