"""exceptions: client ops whose error looks like a crash, not like a fault the test injected.

Jepsen's ``unhandled-exceptions`` lists the exceptions clients threw. Here an op's ``error`` is
crash-like when it names an exception or a panic (``Traceback``, ``KeyError: 'x'``,
``java.lang.NullPointerException``, ``panic:``, ``segmentation fault``), unless it is one of the
errors faults are expected to cause (timeouts, refused or reset connections, unavailable leaders).
Such ops are grouped by exception name with their first occurrence.

A crashing client is a bug in the test harness rather than in the system under test, and the
crashed ops' outcomes are unknown, so crashes make the verdict ``unknown`` (Jepsen reports them
without affecting validity); no crash is ``valid``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from chaos.checkers._rows import OpRows, rows_of
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op

__all__ = ["crash_like", "exceptions", "exceptions_rows"]

_CRASH_WORDS = re.compile(
    r"traceback|exception\b|panic\b|panicked|segmentation fault|core dumped|fatal error"
    r"|assertion",
    re.IGNORECASE,
)
# Exception class names are CamelCase: KeyError, NullPointerException (not "terror").
_CRASH_NAME = re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b")
_EXPECTED = re.compile(
    r"time[sd]?[ -]?out|timed[ -]out|deadline|connection[ _-]?(?:refused|reset|aborted|closed|lost)"
    r"|ConnectionRefused|ConnectionReset|ConnectionAborted|BrokenPipe|broken pipe|unavailable"
    r"|no route|network is unreachable|no leader|not leader|leader changed|partition",
    re.IGNORECASE,
)
_NAME = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception))|(panic)|(Traceback)", re.IGNORECASE)


def crash_like(error: str) -> bool:
    crash = _CRASH_WORDS.search(error) or _CRASH_NAME.search(error)
    return bool(crash) and not _EXPECTED.search(error)


def _name(error: str) -> str:
    names = [m.group(0) for m in _NAME.finditer(error)]
    specific = [n for n in names if n.lower() != "traceback"]
    if specific:
        return specific[-1]  # a traceback ends with the exception that was raised
    return names[0] if names else error.split(":", 1)[0][:60]


def exceptions_rows(rows: OpRows) -> CheckResult:
    groups: dict[str, dict[str, Any]] = {}
    errors = [
        (f, r) for f, lst in rows.by_f.items() for r in lst if r[4] is not None and r[2] != "invoke"
    ]
    errors.sort(key=lambda fr: fr[1][0])
    for f, (pos, p, t, _v, e) in errors:
        if not isinstance(e, str) or not crash_like(e):
            continue
        name = _name(e)
        g = groups.get(name)
        if g is None:
            groups[name] = {
                "type": "crash",
                "exception": name,
                "count": 1,
                "first": {"position": pos, "process": p, "f": f, "op_type": t, "error": e[:2000]},
            }
        else:
            g["count"] += 1
    anomalies = sorted(groups.values(), key=lambda g: -g["count"])
    n = sum(g["count"] for g in anomalies)
    if not n:
        return CheckResult(
            checker="exceptions", verdict=Verdict.VALID, summary="no client op crashed"
        )
    kinds = ", ".join(f"{g['exception']} x{g['count']}" for g in anomalies[:5])
    return CheckResult(
        checker="exceptions",
        verdict=Verdict.UNKNOWN,
        summary=f"{n} client op(s) ended in what looks like a crash: {kinds}",
        anomalies=anomalies,
        stats={"crash_count": n},
    )


def exceptions(history: Sequence[Op]) -> CheckResult:
    return exceptions_rows(rows_of(history))
