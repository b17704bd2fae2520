"""Who started a run: the orchestrator's pid and start time, so that a reaper can tell a dead run
from a live one.

Every backend records this token with what it creates (Docker labels, the SSH run folder's
``owner.json``, the host chain's and the quota mounts' records) and reaps only what names a
process that is gone. Read from this machine's ``/proc``: the orchestrator always runs here.
"""

from __future__ import annotations


def owner_token(pid: int) -> str:
    """``pid:starttime`` — a pid alone could be reused by another process after a crash."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
        start = stat[stat.rfind(")") + 2 :].split()[19]
    except (OSError, IndexError):
        start = "?"
    return f"{pid}:{start}"


def owner_alive(token: str | None) -> bool:
    """Whether ``token`` still names a running process (the same pid *and* start time)."""
    if not token or ":" not in token:
        return False
    pid = token.split(":", 1)[0]
    return pid.isdigit() and owner_token(int(pid)) == token
