"""What the checkers found, sorted into three kinds and grouped by root cause.

A checker's ``anomalies`` are everything it wants the reader to see, and not all of them break the
verdict: lab1's overlapping holders under a working fencing token are *expected*, a stale write
the token rejected is the defence *working*. Drawn as red cards under a green VALID they tell an
instructor the opposite of the truth. So each finding gets one of three kinds:

* **anomaly** — it breaks the verdict: its checker said ``invalid``;
* **observation** — expected or defended: its checker said ``valid`` although it reported it
  (a takeover the fencing token made safe, a scenario that did not fire);
* **note** — its checker could not decide (``unknown``): worth reading, proves nothing.

The kind comes from data the checkers already give (their verdict), a finding's own optional
``"finding"`` field (``"observation"`` / ``"note"`` / ``"anomaly"``) for a checker that knows
better, and :data:`RULES`, a small explicit table for the cases neither says. Nothing here
re-judges a history: the verdict stays the checkers'.

Anomalies are then grouped by root cause — the fault whose stop the damage followed — so one
pause that made fifteen anomalies reads as one cause, told by its most explanatory finding (a
checker's numbered story first, then one with a task to draw).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chaos.report.faults import FaultBand
from chaos.report.sections import anomaly_title

__all__ = ["KINDS", "RULES", "Finding", "Group", "classify", "group_by_cause"]

Kind = Literal["anomaly", "observation", "note"]
KINDS: tuple[Kind, ...] = ("anomaly", "observation", "note")

# (checker, verdict) -> kind, for findings whose checker's verdict alone would mislabel them.
# scenario-fired: "the scenario never fired" makes a run unknown, but it is a fact about the run's
# setup, not about the code under test.
RULES: dict[tuple[str, str], Kind] = {
    ("scenario-fired", "unknown"): "observation",
}

_BY_VERDICT: dict[str, Kind] = {"invalid": "anomaly", "valid": "observation", "unknown": "note"}
# keys whose numbers are times in seconds since the run's origin, in the checkers' records
_TIME_KEYS = ("time", "at", "start", "from", "acquired")
# the keys chaos.report.sections.anomaly_title takes a finding's own sentence from
_SENTENCE_KEYS = ("summary", "message", "description", "explanation")


@dataclass(frozen=True, slots=True)
class Finding:
    """One item of one checker's ``anomalies``, with the kind it is drawn as."""

    kind: Kind
    checker: str
    record: dict[str, Any]
    index: int  # position in results.json, for a stable order
    summary: str = ""  # the checker's sentence
    # the checker's only finding: a record without a sentence of its own ("task t2",
    # "counter-excess") is then titled by what the checker said, which is about it
    alone: bool = False

    def title(self) -> str:
        if self.alone and self.summary and not any(self.record.get(k) for k in _SENTENCE_KEYS):
            return self.summary
        return anomaly_title(self.record)

    @property
    def story(self) -> bool:
        """A checker's numbered steps: the best explanation a page can give."""
        steps = self.record.get("steps")
        return isinstance(steps, list) and bool(steps)

    def task(self) -> str | None:
        tid = self.record.get("task_id", self.record.get("task"))
        return str(tid) if isinstance(tid, str | int) else None

    def rank(self, cited: frozenset[str] = frozenset()) -> tuple[int, int]:
        """Lower explains more: a story, then a finding another one points to ("see
        idempotent-create"), then one with a task to draw, then the rest."""
        if self.story:
            return (0, self.index)
        if self.checker in cited:
            return (1, self.index)
        return (2 if self.task() else 3, self.index)


@dataclass(frozen=True, slots=True)
class Group:
    """Anomalies with one root cause; ``lead`` explains the most, ``rest`` follow from it."""

    cause: str
    lead: Finding
    rest: tuple[Finding, ...]


def _kind(checker: str, verdict: str, record: dict[str, Any]) -> Kind:
    own = record.get("finding")
    if own in KINDS:
        return own
    rule = RULES.get((checker, verdict))
    if rule is not None:
        return rule
    return _BY_VERDICT.get(verdict, "note")


def classify(results: Iterable[dict[str, Any]]) -> list[Finding]:
    """Every finding of every checker result (``results.json``'s ``results``), in file order."""
    out: list[Finding] = []
    for r in results:
        checker = str(r.get("checker", "?"))
        verdict = str(r.get("verdict", "unknown"))
        found = r.get("anomalies") or []
        summary = str(r.get("summary") or "")
        for a in found:
            record = a if isinstance(a, dict) else {"value": a}
            kind = _kind(checker, verdict, record)
            out.append(Finding(kind, checker, record, len(out), summary, len(found) == 1))
    return out


def _numbers(v: Any, key: str = "") -> Iterator[float]:
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _numbers(x, str(k))
    elif isinstance(v, list):
        for x in v:
            yield from _numbers(x, key)
    elif isinstance(v, int | float) and not isinstance(v, bool) and key in _TIME_KEYS:
        yield float(v)


def _fault_id(record: dict[str, Any]) -> str | None:
    for holder in (record, record.get("stop"), record.get("fault")):
        if isinstance(holder, dict) and isinstance(holder.get("fault_id"), str | int):
            return str(holder["fault_id"])
    return None


def _cause(f: Finding, bands: Sequence[FaultBand]) -> str | None:
    """The fault the finding followed: the one it names, else the last one that began before
    the latest time it names; ``None`` when it names no time (or no fault came before)."""
    named = _fault_id(f.record)
    if named is not None:
        return named
    times = list(_numbers(f.record))
    if not times:
        return None
    latest = max(times)
    before = [b for b in bands if b.start <= latest]
    return str(max(before, key=lambda b: b.start).fault_id) if before else None


def _label(cause: str | None, bands: Sequence[FaultBand]) -> str:
    if cause is None:
        return "no fault came before these"
    for b in bands:
        if str(b.fault_id) == cause:
            end = "never healed" if b.open else f"{b.end:.2f} s"
            where = f" of {b.target}" if b.target else ""
            return f"{b.fault}{where} (fault {cause}, {b.start:.2f} s to {end})"
    return f"fault {cause}"


def group_by_cause(anomalies: Sequence[Finding], bands: Sequence[FaultBand]) -> list[Group]:
    """Anomalies grouped by the fault they followed, the most explanatory group first.

    A finding that names no time (a final balance, say) cannot be placed by time: it joins the
    run's only cause when there is exactly one, else a group of its own kind.
    """
    causes = {f.index: _cause(f, bands) for f in anomalies}
    known = {c for c in causes.values() if c is not None}
    if len(known) == 1:
        only = next(iter(known))
        causes = {i: c if c is not None else only for i, c in causes.items()}
    groups: dict[str | None, list[Finding]] = {}
    for f in anomalies:
        groups.setdefault(causes[f.index], []).append(f)
    # a checker's sentence that sends the reader to another ("see idempotent-create") names the
    # finding that explains it
    said = " ".join(f"{f.summary} {f.title()}" for f in anomalies)
    cited = frozenset(f.checker for f in anomalies if f"see {f.checker}" in said)
    out = []
    for cause, members in groups.items():
        ordered = sorted(members, key=lambda f: f.rank(cited))
        out.append(Group(_label(cause, bands), ordered[0], tuple(ordered[1:])))
    out.sort(key=lambda g: g.lead.rank(cited))
    return out
