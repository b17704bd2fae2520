"""Fault intervals recovered from the nemesis ops of a history: worked out here, once.

The checkers judge with these intervals and the report draws them (``chaos.report.faults``), so
both tell the same story. The rules (docs/history-format.md, *Nemesis ops*):

* A fault is a ``phase: start`` op and the ``phase: heal`` op with the same ``fault_id``. Each
  phase is a request and its completion: the nemesis is one process with one op outstanding, so
  the completion is the next nemesis op of the same phase (and fault id, when both name one).
  Producers write the request as ``invoke`` (Jepsen) or already as ``info`` (chaos's ledger);
  adjacency pairs both.
* The interval runs from the start's completion (the fault is in effect) to the heal's completion
  (it is certainly over); without a completion, the request's time stands in. A heal whose
  completion records ``resumed_at`` (run seconds, taken right before the SIGCONT or the thaw; per
  target) ends the interval there instead: the process could run again from that instant, and the
  completion is recorded only after the nemesis checked its state — a resumed process may write in
  between (issue 11: a write at 7.8136 s looked as if it happened during a pause "healed" at
  7.814 s). Histories without it keep the completion's time.
* A heal that names no ``fault_id`` is a heal-all: it ends every fault still in effect. That is
  what Jepsen's nemeses mean by ``:stop`` / ``:heal``, the histories that carry no fault ids. (The
  checkers used to ignore such a heal, which left a healed fault "never healed" and made a lab1
  holder that was resumed look as if it never was.)
* A fault with no heal is open (``end`` is None): a reader must notice it.
* Ops without a ``phase`` follow Jepsen's naming: ``stop…``, ``heal…``, ``resume…``,
  ``recover…`` heal; anything else starts.

How a fault reads (its ``verb``, its ``colour`` in the report) is its row's, in chaos's fault
table, recorded on its start ops by the ledger: this module never tells one fault from another by
name. Histories recorded before the start ops carried them (and Jepsen's) read with
:data:`RECORDED_BEFORE`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos.histories.ops import NEMESIS, JSONValue, OpLike

__all__ = ["RECORDED_BEFORE", "FaultInterval", "NemesisOp", "fault_intervals"]


# what the intervals read of an op: an Op, or the report's lighter rows
NemesisOp = OpLike

# (verb, colour) of the faults whose start ops were recorded without them (runs made before the
# fault table's rows were written into the history, and Jepsen's nemesis ops): a frozen reading
# of old records, never where a new fault is added (its row in chaos.nemesis.table is)
RECORDED_BEFORE: dict[str, tuple[str, str | None]] = {
    "pause": ("paused", "#f4a261"),
    "freeze": ("frozen", "#e9c46a"),
    "kill": ("killed", "#e76f51"),
    "partition": ("partitioned", "#6baed6"),
    "crash": ("crash", "#e76f51"),
}
# and which of them stopped a process (``stops``) or moved clocks (``moves_clocks``)
STOPPED_BEFORE = frozenset({"pause", "freeze"})
CLOCKS_BEFORE = frozenset({"clock"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultInterval:
    """One fault from the moment it took effect to its heal.

    ``targets``: the resolved targets (one dict per process or node hit); ``nodes`` and
    ``process``: where it hit, for lanes and labels (a partition's nodes are its grudge's);
    ``detail``: the start's completion value when it is an object (``signal``, ``pid``,
    ``grudge``, ...); ``verb`` and ``colour``: how it reads, ``stops`` and ``moves_clocks``: what
    it does, as its start op recorded them (its row's; old records: :data:`RECORDED_BEFORE`).
    """

    fault_id: JSONValue  # as the start op recorded it
    fault: str
    start: float
    end: float | None  # None: never healed
    targets: list[dict[str, Any]] = field(default_factory=list)
    trigger: dict[str, Any] | None = None
    nodes: tuple[str, ...] = ()
    process: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    verb: str = ""
    colour: str | None = None
    stops: bool = False  # the process stopped and went on later (pause, freeze)
    moves_clocks: bool = False

    def covers(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t <= self.end)

    def touches(self, node: str, process: str | None = None) -> bool:
        for tg in self.targets:
            if tg.get("node") == node and (process is None or tg.get("process") in (None, process)):
                return True
        return False

    def describe(self) -> str:
        """One sentence, from what the history recorded: the targets (a moved clock's amount, a
        lossy link's pairs, when its targets record them) and the fault's verb."""
        dur = f" for {self.end - self.start:.1f} s" if self.end is not None else " (never healed)"
        moved = [t for t in self.targets if t.get("node") and _clock_amount(t)]
        if moved:
            said = ", ".join(
                f"{t.get('node')}'s {t.get('process')} clock {_clock_amount(t)}" for t in moved
            )
            return f"{said} at {self.start:.2f} s{dur}"
        links = self.targets[0].get("links") if self.targets else None
        if isinstance(links, dict):
            pairs = ", ".join(f"{s}->{r}" for r, ss in sorted(links.items()) for s in ss)
            p = self.targets[0].get("probability")
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
        return f"{who} {self.verb or self.fault} at {self.start:.2f} s{dur}"

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
    """A moved clock as the history recorded its target: its rate, strobe amplitude or offset
    ("" for a target that records none: not a clock)."""
    if isinstance(t.get("rate"), int | float):
        return f"at {t['rate']:g}x"
    if isinstance(t.get("delta"), int | float):
        return f"strobing {t['delta']:+.3f} s"
    if isinstance(t.get("offset"), int | float):
        return f"{t['offset']:+.3f} s"
    return ""


def _targets(value: object) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if "targets" in value and isinstance(value["targets"], list):
            return [t for t in value["targets"] if isinstance(t, dict)]
        return [value]
    if isinstance(value, list):
        return [t for t in value if isinstance(t, dict)]
    return []


def _where(value: object, op: NemesisOp) -> tuple[tuple[str, ...], str | None]:
    """The nodes and the process a start op's value names."""
    detail = value if isinstance(value, dict) else {}
    nodes: list[str] = []
    grudge = detail.get("grudge")
    if isinstance(grudge, dict):
        nodes = sorted(str(n) for n in grudge)
    elif isinstance(detail.get("nodes"), list):
        nodes = [str(n) for n in detail["nodes"]]
    elif detail.get("node") is not None:
        nodes = [str(detail["node"])]
    elif isinstance(detail.get("targets"), list):
        nodes = list(dict.fromkeys(str(t["node"]) for t in _targets(detail) if t.get("node")))
    elif op.extra.get("node") is not None:
        nodes = [str(op.extra["node"])]
    process = detail.get("process") or op.extra.get("target_process")
    return tuple(nodes), (str(process) if process else None)


def _fid(op: NemesisOp) -> JSONValue:
    return op.extra.get("fault_id")


def _key(fid: object) -> str | None:
    # compared as text: a fault id read back from JSON, EDN or a log keeps one spelling per run
    return None if fid is None else str(fid)


def _phase(op: NemesisOp) -> str:
    phase = op.extra.get("phase")
    if phase:
        return str(phase)
    # Producers that do not write a phase still follow Jepsen's naming (start-x / stop-x, heal).
    if op.f.startswith(("stop", "heal", "resume", "recover")):
        return "heal"
    return "start"


def _pairs(nemesis: list[NemesisOp]) -> list[tuple[NemesisOp, NemesisOp | None]]:
    """Each nemesis request with its completion (the next op of the same phase and fault)."""
    out: list[tuple[NemesisOp, NemesisOp | None]] = []
    pending: NemesisOp | None = None
    for op in nemesis:
        if (
            pending is not None
            and op.type != "invoke"
            and _phase(op) == _phase(pending)
            and _key(_fid(op)) in (None, _key(_fid(pending)))
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


def _interval(req: NemesisOp, comp: NemesisOp | None, end: float | None) -> FaultInterval:
    src = comp if comp is not None else req
    nodes, process = _where(src.value, src)
    if not nodes and comp is not None:
        nodes, process = _where(req.value, req)
    fid = _fid(req)
    if fid is None and comp is not None:
        fid = _fid(comp)
    trigger = req.extra.get("trigger")
    fault = str(req.extra.get("fault") or req.f)
    verb, colour = _reading(req, fault)
    stops, clocks = req.extra.get("stops"), req.extra.get("moves_clocks")
    return FaultInterval(
        stops=stops if isinstance(stops, bool) else fault in STOPPED_BEFORE,
        moves_clocks=clocks if isinstance(clocks, bool) else fault in CLOCKS_BEFORE,
        fault_id=fid if fid is not None else f"@{req.index}",
        fault=fault,
        start=src.time,
        end=None if end is None else max(end, src.time),
        targets=_targets(src.value) or _targets(req.value),
        trigger=trigger if isinstance(trigger, dict) else None,
        nodes=nodes,
        process=process,
        detail=src.value if isinstance(src.value, dict) else {},
        verb=verb,
        colour=colour,
    )


def _reading(req: NemesisOp, fault: str) -> tuple[str, str | None]:
    """The verb and colour the start op recorded (its fault's row), else the old records'."""
    verb, colour = req.extra.get("verb"), req.extra.get("colour")
    if isinstance(verb, str) and verb:
        return verb, colour if isinstance(colour, str) and colour else None
    return RECORDED_BEFORE.get(fault, (fault, None))


def _resumed_at(op: NemesisOp) -> float | None:
    """The earliest ``resumed_at`` a heal's completion records (its value, or its targets')."""
    value = op.value
    found = [
        float(t["resumed_at"])
        for t in _targets(value)
        if isinstance(t.get("resumed_at"), int | float) and not isinstance(t["resumed_at"], bool)
    ]
    return min(found) if found else None


def _heal_end(req: NemesisOp, done: NemesisOp) -> float:
    """When a heal took effect: its ``resumed_at`` if recorded (never before its request, never
    after its completion), else the completion's time."""
    resumed = _resumed_at(done)
    if resumed is None:
        return done.time
    return min(max(resumed, req.time), done.time)


def fault_intervals(history: Iterable[NemesisOp]) -> list[FaultInterval]:
    """Every fault of the history, in order of start (rules in the module's docstring)."""
    starts: dict[str, tuple[NemesisOp, NemesisOp | None]] = {}
    out: list[FaultInterval] = []
    nemesis = [op for op in history if op.process == NEMESIS]
    for req, comp in _pairs(nemesis):
        done = comp if comp is not None else req
        key = _key(_fid(req)) or _key(comp and _fid(comp))
        if _phase(req) == "start":
            starts[key or f"@{req.index}"] = (req, comp)
        elif key is not None:
            if key in starts:
                out.append(_interval(*starts.pop(key), _heal_end(req, done)))
        else:
            # a heal-all: it ends every fault still in effect
            end = _heal_end(req, done)
            out.extend(_interval(*starts.pop(k), end) for k in list(starts))
    out.extend(_interval(req, comp, None) for req, comp in starts.values())
    out.sort(key=lambda f: f.start)
    return out
