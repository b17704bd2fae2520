"""Fault schedules as data: steps (at, fault, target, duration), generated from a seed or scripted.

A random schedule is a pure function of its parameters and a seeded random stream: the same seed
gives the same steps, so a run can be replayed. Targets are resolved only when a step starts (who
leads etcd, which worker is busy, is a fact of that moment), each step from its own seeded stream
(``targets:<index>``) so that one step's draw never shifts another's.

``signature`` reduces a stored ``schedule.json`` to what must be equal between two runs of one seed:
fault kinds, planned offsets, durations, resolved nodes and processes, grudges — not wall times or
pids, which belong to the machine, not to the seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0}


def parse_duration(text: object) -> float:
    """``3s``, ``500ms``, ``1.5m``, ``2`` (seconds) -> seconds; raises ValueError with the text."""
    if isinstance(text, bool):
        raise ValueError(f"expected a duration like 3s, got {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        s = str(text).strip().lower()
        for unit in sorted(_UNITS, key=len, reverse=True):
            if s.endswith(unit) and s[: -len(unit)].strip():
                try:
                    value = float(s[: -len(unit)]) * _UNITS[unit]
                except ValueError:
                    raise ValueError(f"expected a duration like 3s, got {text!r}") from None
                break
        else:
            try:
                value = float(s)
            except ValueError:
                raise ValueError(f"expected a duration like 3s, got {text!r}") from None
    if value < 0 or value != value or value == float("inf"):
        raise ValueError(f"expected a non-negative duration, got {text!r}")
    return value


# A schedule file's data as written, without YAML's implicit typing (a custom grudge): text, and
# lists and maps of it.
Plain: TypeAlias = str | list["Plain"] | dict[str, "Plain"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One fault of a schedule: start ``at`` seconds after the workload starts, last ``duration``.

    ``target`` is a target spec (None: the fault's default); ``grudge`` a custom partition;
    ``source`` says where the step came from (``seed`` or ``file.yaml:3``) for error messages.
    """

    at: float
    fault: str
    duration: float
    target: str | None = None
    grudge: Plain | None = None
    source: str = "seed"
    index: int = 0

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "at": round(self.at, 3),
            "fault": self.fault,
            "target": self.target,
            "duration": round(self.duration, 3),
        }
        if self.grudge is not None:
            d["grudge"] = self.grudge
        if self.source != "seed":
            d["source"] = self.source
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """A fault the random schedule may draw, with its target spec (None: the fault's default)."""

    fault: str
    target: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    steps: tuple[Step, ...] = ()
    triggers: tuple[str, ...] = ()
    origin: str = "seed"
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "steps": [s.to_json() for s in self.steps],
            "triggers": list(self.triggers),
            **self.meta,
        }


def generate(
    choices: Sequence[Choice],
    *,
    rng: random.Random,
    horizon: float,
    interval: float,
    duration: float,
    jitter: float = 0.5,
    start: float = 1.0,
) -> list[Step]:
    """Faults one after another until ``horizon``: a jittered gap, one fault drawn from ``choices``
    for ``duration`` (shortened to end by the horizon), healed, the next gap.

    The gap before each fault is ``interval * uniform(1 - jitter, 1 + jitter)``; the first fault
    comes after ``start`` seconds plus a jittered fraction of the interval, so that a short run
    still sees faults. Faults never overlap: each is healed before the next starts (a scripted
    timeline may overlap them).
    """
    if not choices:
        return []
    if interval <= 0 or duration <= 0:
        raise ValueError("interval and duration must be positive")
    jitter = min(max(jitter, 0.0), 0.95)
    steps: list[Step] = []
    t = start + interval * rng.uniform(0.0, jitter)
    while t < horizon:
        c = choices[rng.randrange(len(choices))]
        d = round(min(duration, horizon - t), 3)
        if d < 0.2:
            break
        steps.append(
            Step(at=round(t, 3), fault=c.fault, target=c.target, duration=d, index=len(steps))
        )
        t += d + interval * rng.uniform(1.0 - jitter, 1.0 + jitter)
    return steps


def _targets_key(entry: dict[str, Any]) -> tuple[object, ...]:
    out: list[object] = []
    for t in entry.get("targets") or []:
        if not isinstance(t, dict):
            continue
        if "grudge" in t:
            out.append(("grudge", tuple((k, tuple(v)) for k, v in sorted(t["grudge"].items()))))
        else:
            out.append((t.get("node"), t.get("process")))
    return tuple(sorted(out, key=repr))


def signature(applied: Iterable[dict[str, Any]], *, digits: int = 1) -> list[tuple[Any, ...]]:
    """The seed-determined part of a resolved schedule (``schedule.json``), comparable across runs."""
    out = []
    for e in applied:
        intent = e.get("intent") or {}
        at = intent.get("at") if isinstance(intent, dict) else None
        dur = intent.get("duration") if isinstance(intent, dict) else None
        trig = e.get("trigger") or {}
        out.append(
            (
                e.get("fault"),
                None if at is None else round(float(at), digits),
                None if dur is None else round(float(dur), digits),
                intent.get("target") if isinstance(intent, dict) else None,
                _targets_key(e),
                trig.get("phrase") if isinstance(trig, dict) else None,
            )
        )
    return sorted(out, key=lambda s: (s[1] is None, s[1] or 0.0, repr(s)))
