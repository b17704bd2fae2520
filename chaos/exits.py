"""The exit status of every ``chaos`` command, defined once.

A verdict's status (0, 1, 2) answers the question the command asked; the others say why there is
no answer. Everything that exits, and everything that reads another chaos's exit status (the grade
runs ``chaos run`` in a subprocess), names these members; README.md and docs/user-guide.md show the
table :data:`MEANING` holds, and a unit test keeps them equal.

The bottom layer of the package (pyproject.toml): the standard library only, so that any module —
checkers, report, grade, the command line — can use it.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["MEANING", "Exit", "usage_status"]


class Exit(IntEnum):
    VALID = 0
    INVALID = 1
    UNKNOWN = 2
    USAGE = 3
    ENVIRONMENT = 4
    INTERNAL = 5
    INTERRUPTED = 130


MEANING: dict[Exit, str] = {
    Exit.VALID: "valid (a command without a verdict: done)",
    Exit.INVALID: "invalid: an anomaly breaks the verdict",
    Exit.UNKNOWN: "unknown: the data cannot decide (a fault point never reached, a search out of "
    "budget)",
    Exit.USAGE: "bad usage or bad input (an option out of range, a misspelt target, a malformed "
    "file), refused in one line before anything starts or is written",
    Exit.ENVIRONMENT: "environment: no Docker engine answers, the node image cannot be built, a "
    "port or file cannot be used",
    Exit.INTERNAL: "internal error, a bug of chaos's own: one line naming a log with the traceback",
    Exit.INTERRUPTED: "interrupted (Ctrl-C): faults healed, the cluster torn down",
}


def usage_status(code: int) -> Exit:
    """The status for a command-line error carrying ``code``: click's own codes (1 for its
    errors, 2 for bad usage) collide with the verdicts', so they become :attr:`Exit.USAGE`; a
    status chaos set itself (environment, internal) is kept."""
    if code in (Exit.ENVIRONMENT, Exit.INTERNAL, Exit.INTERRUPTED):
        return Exit(code)
    return Exit.USAGE
