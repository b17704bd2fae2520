"""Verdicts and their composition.

A checker returns a :class:`CheckResult`; results combine with invalid > unknown > valid. A checker
that raises is turned into ``unknown`` carrying the error (Jepsen's ``check-safe``), so one broken
checker never hides the others' findings.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, Protocol, TypeVar

from chaos.exits import Exit


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"

    @property
    def rank(self) -> int:
        return {"valid": 0, "unknown": 1, "invalid": 2}[self.value]

    @property
    def exit_code(self) -> Exit:
        return {"valid": Exit.VALID, "invalid": Exit.INVALID, "unknown": Exit.UNKNOWN}[self.value]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """What one checker concluded. ``summary`` is one sentence a student understands;
    ``anomalies`` are the offending items, each a JSON object with its own evidence."""

    checker: str
    verdict: Verdict
    summary: str
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "checker": self.checker,
            "verdict": self.verdict.value,
            "summary": self.summary,
            "anomalies": self.anomalies,
            "stats": self.stats,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> CheckResult:
        return CheckResult(
            checker=d["checker"],
            verdict=Verdict(d["verdict"]),
            summary=d["summary"],
            anomalies=list(d.get("anomalies", [])),
            stats=dict(d.get("stats", {})),
        )


def combine(results: Iterable[CheckResult]) -> Verdict:
    worst = Verdict.VALID
    for r in results:
        if r.verdict.rank > worst.rank:
            worst = r.verdict
    return worst


M_contra = TypeVar("M_contra", contravariant=True)
M = TypeVar("M")


class ModelChecker(Protocol[M_contra]):
    """One checker of a lab: a verdict on one run, read from the lab's model of it, built once per
    check (``Lab1Run`` in ``chaos.workloads.lab1.model``, ``Lab3Run`` in
    ``chaos.workloads.lab3.model``; each lab's ``CHECKERS`` table, run by :func:`run_checkers`).

    Must: be a pure function of the model — the same model gives the same result, offline and
    live; say ``unknown`` with the reason when the model lacks what it needs (a run stored before
    a part existed), never ``valid``. Must not: change the model (its parts are shared by every
    checker of the check), read files, clocks or the network, or take who wrote what from the code
    under test's own reports. It may raise on a malformed run: ``check_safe`` makes it ``unknown``.
    """

    def __call__(self, run: M_contra, /) -> CheckResult: ...


def check_safe(name: str, fn: Callable[[], CheckResult]) -> CheckResult:
    try:
        return fn()
    except Exception as e:  # a checker bug must not hide the other checkers' findings
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"checker {name} crashed: {type(e).__name__}: {e}",
            stats={"traceback": traceback.format_exc()},
        )


def run_checkers(checkers: Mapping[str, ModelChecker[M]], run: M) -> list[CheckResult]:
    """Every checker of a lab over one model of a run, in the table's order; one that crashes
    becomes ``unknown`` without hiding the others (each lab's ``CHECKERS`` table)."""
    return [check_safe(name, partial(fn, run)) for name, fn in checkers.items()]
