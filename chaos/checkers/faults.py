"""Fault intervals recovered from the nemesis ops of a history.

A fault is a ``phase: start`` op and the ``phase: heal`` op with the same ``fault_id``; its interval
runs from the start's completion to the heal's completion (or to the end of the history when the
heal never happened, which is itself worth reporting).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaos.histories.ops import Op


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultInterval:
    fault_id: Any
    fault: str
    start: float
    end: float | None
    targets: list[dict[str, Any]] = field(default_factory=list)
    trigger: dict[str, Any] | None = None

    def covers(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t <= self.end)

    def touches(self, node: str, process: str | None = None) -> bool:
        for tg in self.targets:
            if tg.get("node") == node and (process is None or tg.get("process") in (None, process)):
                return True
        return False

    def describe(self) -> str:
        dur = f" for {self.end - self.start:.1f} s" if self.end is not None else " (never healed)"
        if self.fault == "clock":
            moved = ", ".join(
                f"{t.get('node')}'s {t.get('process')} clock {_clock_amount(t)}"
                for t in self.targets
                if t.get("node")
            )
            return f"{moved or 'clocks'} at {self.start:.2f} s{dur}"
        if self.fault == "packet-loss":
            t = self.targets[0] if self.targets else {}
            links = t.get("links") or {}
            pairs = ", ".join(f"{s}->{r}" for r, ss in sorted(links.items()) for s in ss)
            p = t.get("probability")
            lost = f"{p:.0%} loss" if isinstance(p, int | float) else "loss"
            return f"{lost} on {pairs or 'some links'} at {self.start:.2f} s{dur}"
        who = (
            ", ".join(
                f"{t.get('node')}'s {t['process']}" if t.get("process") else str(t.get("node"))
                for t in self.targets
                if t.get("node")
            )
            or "the cluster"
        )
        verb = {"pause": "paused", "freeze": "frozen", "kill": "killed", "partition": "partitioned"}
        return f"{who} {verb.get(self.fault, self.fault)} at {self.start:.2f} s{dur}"

    def to_json(self) -> dict[str, Any]:
        return {
            "fault_id": self.fault_id,
            "fault": self.fault,
            "start": round(self.start, 6),
            "end": None if self.end is None else round(self.end, 6),
            "targets": self.targets,
            "trigger": self.trigger,
        }


def _clock_amount(t: dict[str, Any]) -> str:
    """A clock fault's target as the history recorded it: its offset, strobe amplitude or rate."""
    if isinstance(t.get("rate"), int | float):
        return f"at {t['rate']:g}x"
    if isinstance(t.get("delta"), int | float):
        return f"strobing {t['delta']:+.3f} s"
    if isinstance(t.get("offset"), int | float):
        return f"{t['offset']:+.3f} s"
    return "moved"


def _targets(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if "targets" in value and isinstance(value["targets"], list):
            return [t for t in value["targets"] if isinstance(t, dict)]
        return [value]
    if isinstance(value, list):
        return [t for t in value if isinstance(t, dict)]
    return []


def fault_intervals(history: list[Op]) -> list[FaultInterval]:
    starts: dict[Any, Op] = {}
    heals: dict[Any, Op] = {}
    for op in history:
        if not op.is_nemesis:
            continue
        fid = op.extra.get("fault_id")
        phase = op.extra.get("phase")
        if fid is None:
            continue
        if phase == "start":
            starts[fid] = op
        elif phase == "heal":
            heals[fid] = op
    out = []
    for fid, s in starts.items():
        h = heals.get(fid)
        out.append(
            FaultInterval(
                fault_id=fid,
                fault=str(s.extra.get("fault", s.f)),
                start=s.time,
                end=h.time if h else None,
                targets=_targets(s.value),
                trigger=s.extra.get("trigger"),
            )
        )
    return sorted(out, key=lambda f: f.start)
