"""Reading a process table: whether a process still runs, and its state letter.

One rule, asked two ways. A multithreaded process's leader turns zombie first while its other
threads are still exiting and still hold its sockets (a killed nats-server keeps accepting for a
moment), so a process is alive while *any* of its threads is neither zombie (``Z``) nor dead
(``X``); its state (``S``, ``R``, ``T`` for stopped, …) is the leader's. :func:`alive` and
:func:`state` read this machine's ``/proc`` (the Docker backend, whose nodes' processes are host
processes); :data:`STATUS` is the same reading as a shell script for a node reached remotely (the
SSH backend), whose output :func:`parse_status` reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def _state_letter(stat: str) -> str:
    # the command name in parentheses may itself hold spaces and parentheses: the letter follows
    # the last ")"
    return stat[stat.rfind(")") + 2]


def alive(pid: int) -> bool:
    """Whether any thread of process ``pid`` (of this machine's /proc) still runs."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                stat = fh.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if _state_letter(stat) not in ("Z", "X"):
            return True
    return False


def state(pid: int) -> str | None:
    """The state letter of process ``pid``'s leader, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return _state_letter(stat)


# Run with ``STATUS.format(pids=<folder of NAME.pid files>)``; prints one line per pid file:
# "<name> <pid> <y|n: any thread alive> <leader's state letter|->".
STATUS = r"""
cd {pids} 2>/dev/null || exit 0
for f in *.pid; do
  [ -e "$f" ] || continue
  p=$(cat "$f" 2>/dev/null); [ -n "$p" ] || continue
  live=$(cat /proc/$p/task/*/stat 2>/dev/null | sed 's/.*) //' | cut -c1 | grep -v -m1 '[ZX]')
  lead=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1)
  a=n; [ -n "$live" ] && a=y
  echo "${{f%.pid}} $p $a ${{lead:--}}"
done
"""


@dataclass(frozen=True, slots=True)
class Status:
    """One named process as :data:`STATUS` saw it (``state`` is ``-`` when it has no leader)."""

    pid: int
    alive: bool
    state: str


def parse_status(output: str) -> dict[str, Status]:
    """:data:`STATUS`'s output by process name; lines of any other shape are skipped."""
    out: dict[str, Status] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1].isdigit():
            out[parts[0]] = Status(int(parts[1]), parts[2] == "y", parts[3])
    return out
