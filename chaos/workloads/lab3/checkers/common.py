"""What lab3's checkers share: how an invalid verdict is told."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict


def invalid(
    name: str, sentences: Sequence[str], anomalies: list[dict[str, Any]], stats: dict[str, Any]
) -> CheckResult:
    """An invalid result whose summary is every anomaly's sentence, in the order found."""
    return CheckResult(
        checker=name,
        verdict=Verdict.INVALID,
        summary="; ".join(sentences),
        anomalies=anomalies,
        stats=stats,
    )
