"""Nemesis intervals: fault starts paired with their heals by ``fault_id``.

A band runs from the start's completion (the fault is in effect) to the heal's completion (it is
certainly over), per docs/history-format.md. A fault never healed runs to the end of the run and is
marked open, because that is exactly what a reader must notice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos.histories.ops import NEMESIS
from chaos.report.loading import OpLike

# Colours by fault kind, shared by the plots, the timeline and the sequence diagrams so a reader
# learns them once. Lab fault points get the purple family.
FAULT_COLOURS = {
    "pause": "#f4a261",
    "freeze": "#e9c46a",
    "kill": "#e76f51",
    "partition": "#6baed6",
    "crash": "#e76f51",
}
FAULT_POINT_COLOUR = "#b39ddb"
OTHER_COLOURS = ("#a1d99b", "#fdae6b", "#bcbddc", "#c7e9c0", "#fdd0a2")


def fault_colour(kind: str) -> str:
    if kind in FAULT_COLOURS:
        return FAULT_COLOURS[kind]
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

    @property
    def colour(self) -> str:
        return fault_colour(self.fault)

    @property
    def target(self) -> str:
        where = ",".join(self.nodes)
        if self.process and where:
            return f"{self.process}@{where}"
        return where or self.process or "?"

    @property
    def label(self) -> str:
        sig = self.detail.get("signal")
        extra = f" ({sig})" if sig else ""
        return f"{self.fault} {self.target}{extra}"

    def overlaps(self, t0: float, t1: float) -> bool:
        return self.start <= t1 and self.end >= t0


def _target(value: Any, op: OpLike) -> tuple[tuple[str, ...], str | None, dict[str, Any]]:
    detail = value if isinstance(value, dict) else {}
    nodes: list[str] = []
    grudge = detail.get("grudge")
    if isinstance(grudge, dict):
        nodes = sorted(str(n) for n in grudge)
    elif isinstance(detail.get("nodes"), list):
        nodes = [str(n) for n in detail["nodes"]]
    elif detail.get("node") is not None:
        nodes = [str(detail["node"])]
    elif op.extra.get("node") is not None:
        nodes = [str(op.extra["node"])]
    process = detail.get("process") or op.extra.get("target_process")
    return tuple(nodes), (str(process) if process else None), detail


def _fid(op: OpLike) -> str | None:
    fid = op.extra.get("fault_id")
    return None if fid is None else str(fid)


def _pairs(nemesis: list[OpLike]) -> list[tuple[OpLike, OpLike | None]]:
    """Each nemesis request with its completion.

    The nemesis is one process with one op outstanding, so a completion is the line right after
    its request, with the same phase and fault id. Producers write the request either as
    ``invoke`` (Jepsen) or already as ``info``; adjacency pairs both the same way.
    """
    out: list[tuple[OpLike, OpLike | None]] = []
    pending: OpLike | None = None
    for op in nemesis:
        if (
            pending is not None
            and op.type != "invoke"
            and _phase(op) == _phase(pending)
            and _fid(op) in (None, _fid(pending))
        ):
            out.append((pending, op))
            pending = None
            continue
        if pending is not None:
            out.append((pending, None))
        pending = op
    if pending is not None:
        out.append((pending, None))
    return out


def fault_bands(history: Sequence[OpLike], end_time: float) -> list[FaultBand]:
    starts: dict[str, tuple[OpLike, OpLike | None]] = {}
    bands: list[FaultBand] = []

    def close(fid: str, t: float, is_open: bool) -> None:
        req, comp = starts.pop(fid)
        src = comp if comp is not None else req
        nodes, process, detail = _target(src.value, src)
        if not nodes and comp is not None:
            nodes, process, detail = _target(req.value, req)
        bands.append(
            FaultBand(
                fault_id=fid,
                fault=str(req.extra.get("fault") or req.f),
                start=src.time,
                end=max(t, src.time),
                open=is_open,
                nodes=nodes,
                process=process,
                detail=detail,
            )
        )

    nemesis = [op for op in history if op.process == NEMESIS]
    for req, comp in _pairs(nemesis):
        done = comp if comp is not None else req
        fid = _fid(req) or (comp and _fid(comp))
        if _phase(req) == "start":
            starts[fid or f"@{req.index}"] = (req, comp)
        elif fid is not None:
            if fid in starts:
                close(fid, done.time, False)
        else:
            # A heal without a fault id is a heal-all: it ends every fault still in effect.
            for f in list(starts):
                close(f, done.time, False)
    for fid in list(starts):
        close(fid, end_time, True)
    bands.sort(key=lambda b: b.start)
    return bands


def _phase(op: OpLike) -> str:
    phase = op.extra.get("phase")
    if phase:
        return str(phase)
    # Producers that do not write a phase still follow Jepsen's naming (start-x / stop-x, heal).
    if op.f.startswith(("stop", "heal", "resume", "recover")):
        return "heal"
    return "start"
