"""What lab1's checkers share: how an invalid verdict is told."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict


def invalid(
    name: str,
    sentences: Sequence[str],
    anomalies: list[dict[str, Any]],
    stats: dict[str, Any],
    more_what: str = "",
) -> CheckResult:
    """An invalid result whose summary is the first anomaly's sentence, and how many follow."""
    extra = len(anomalies) - 1
    more = f" (and {extra} more{' ' + more_what if more_what else ''})" if extra > 0 else ""
    first = sentences[0]
    return CheckResult(
        checker=name,
        verdict=Verdict.INVALID,
        summary=first[0].upper() + first[1:] + more + ".",
        anomalies=anomalies,
        stats=stats,
    )


def valid(name: str, summary: str, stats: dict[str, Any], **more: Any) -> CheckResult:
    return CheckResult(checker=name, verdict=Verdict.VALID, summary=summary, stats=stats, **more)


def unknown(
    name: str, summary: str, stats: dict[str, Any] | None = None, **more: Any
) -> CheckResult:
    return CheckResult(
        checker=name, verdict=Verdict.UNKNOWN, summary=summary, stats=stats or {}, **more
    )


class Told:
    """A checker's anomalies, each with the sentence that tells it (in the order found)."""

    def __init__(self) -> None:
        self.sentences: list[str] = []
        self.anomalies: list[dict[str, Any]] = []

    def add(self, sentence: str, **anomaly: Any) -> None:
        self.sentences.append(sentence)
        self.anomalies.append({**anomaly, "summary": sentence})

    def __bool__(self) -> bool:
        return bool(self.anomalies)
