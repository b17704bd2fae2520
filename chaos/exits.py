"""The exit status of every ``chaos`` command, defined once.

A verdict's status (0, 1, 2) answers the question the command asked; the others say why there is
no answer. Everything that exits, and everything that reads another chaos's exit status (the grade
runs ``chaos run`` in a subprocess), names these members; README.md and docs/user-guide.md show the
table :data:`MEANING` holds, and a unit test keeps them equal.

How a command ends is here too: a command that owns its process may keep what it built until the
process ends (:func:`keep_until_exit`) instead of freeing it object by object.

The bottom layer of the package (pyproject.toml): the standard library only, so that any module —
checkers, report, grade, the command line — can use it.
"""

from __future__ import annotations

import gc
from enum import IntEnum

__all__ = ["MEANING", "Exit", "hold_until_exit", "holds_kept", "keep_until_exit", "usage_status"]


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


# What a command that ends the process has handed over to die with it (None: nothing is kept).
_kept: list[object] | None = None


def hold_until_exit() -> None:
    """Say that this process ends once its answer is printed (chaos.cli.app's ``entry``), so
    that :func:`keep_until_exit` keeps what it is given. Only a command's process entry point may
    (``chaos check FILE --model``): a library call or a test must free what it builds."""
    global _kept
    if _kept is None:
        _kept = []


def keep_until_exit(*objs: object) -> None:
    """Hand ``objs`` (a history read, its partitions) to the process's end instead of freeing
    them when the last reference goes, if :func:`hold_until_exit` was called; else nothing.

    Freeing a 100k-op history's million small objects one by one takes ~0.1 s of a 1 s check
    (Porcupine, in Go, leaves its heap to the operating system too). What is kept is moved out
    of the collector's generations (``gc.freeze``): the collections after would walk it again."""
    if _kept is not None:
        _kept.extend(objs)
        gc.freeze()


def holds_kept() -> bool:
    """Whether :func:`keep_until_exit` holds anything: the process should then end without
    freeing it (chaos.cli.app's ``entry`` does)."""
    return bool(_kept)
