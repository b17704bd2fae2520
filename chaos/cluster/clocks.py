"""Per-process clocks of the code under test, moved through libfaketime.

Every container shares the host kernel's clock, so a clock cannot be moved per node by the kernel.
Instead the service processes of the code under test start with Debian's libfaketime preloaded
(``LD_PRELOAD``) and read their fake wall clock from a file of their own,
``<live>/clock/<node>-<process>``, that only the orchestrator writes: the folder is root's (0755),
the services run as ``nobody``, so they may read their clock, never set it.

- ``FAKETIME_NO_CACHE=1``: the library rereads the file at every call, so a change applies at once.
- ``FAKETIME_DONT_FAKE_MONOTONIC=1``: ``CLOCK_MONOTONIC`` stays true. Events are stamped with it and
  line up with the orchestrator's ops; code that measures durations with it (Python's
  ``time.monotonic``, ``time.sleep``) is untouched by clock faults — only wall-clock readings
  (``time.time``, ``datetime.now``) move, which is what a skewed NTP client does to a real host.
- Infrastructure (etcd, nats-server) is never preloaded: they are Go binaries that read the clock
  through the vDSO and raw syscalls, not through libc, so libfaketime could not move them anyway.

The file holds one libfaketime spec: ``+0`` (no offset) or ``+4.000000`` / ``-0.250000``
(seconds, relative to the true time).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

# Debian's libfaketime package (checked in the node image by `chaos doctor`/the clock fault)
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CLOCK_DIR = "clock"
ZERO = "+0\n"


def clock_dir(live: Path) -> Path:
    return live / CLOCK_DIR


def clock_file(live: Path, node: str, process: str) -> Path:
    return clock_dir(live) / f"{node}-{process}"


def spec_text(offset: float) -> str:
    """The libfaketime spec for a constant ``offset`` in seconds (microsecond resolution)."""
    return ZERO if offset == 0 else f"{offset:+.6f}\n"


def make_clock_dir(live: Path) -> Path:
    """The folder of the clock files: root's, readable by the services, writable by nobody else."""
    d = clock_dir(live)
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    return d


def write_offset(path: Path, offset: float) -> None:
    """Set one process's clock ``offset`` seconds away from the true time (atomically: a reader
    sees the old spec or the new one, never half a line)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, spec_text(offset).encode())
    finally:
        os.close(fd)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def read_offset(path: Path) -> float | None:
    """The offset a clock file sets now (None: no file or not a spec this module writes)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def reset_all(live: Path) -> list[str]:
    """Put every clock of the run back to the true time; returns the files that were off."""
    out: list[str] = []
    d = clock_dir(live)
    if not d.is_dir() or d.is_symlink():
        return out
    for p in sorted(d.iterdir()):
        if p.name.startswith(".") or not p.is_file() or p.is_symlink():
            continue
        if read_offset(p) != 0:
            write_offset(p, 0.0)
            out.append(p.name)
    return out


def process_env(mount: str, node: str, process: str) -> dict[str, str]:
    """What a service process's environment needs to read its clock from its file (``mount`` is
    where the live folder appears inside the node)."""
    return {
        "LD_PRELOAD": FAKETIME_LIB,
        "FAKETIME_TIMESTAMP_FILE": f"{mount}/{CLOCK_DIR}/{node}-{process}",
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def preload_argv(mount: str, node: str, process: str, argv: list[str]) -> list[str]:
    """``argv`` started through ``env`` with the clock environment, so that only the service's own
    process (after the node's root shell dropped to the service user) loads libfaketime: the
    library shares a semaphore with the children of the first process that loads it, and a
    semaphore a root shell created cannot be opened by ``nobody`` (the service would not start)."""
    pairs = [f"{k}={v}" for k, v in process_env(mount, node, process).items()]
    return ["env", *pairs, *argv]


def wall_minus_monotonic(tries: int = 20, wall: Callable[[], float] | None = None) -> float:
    """A wall clock (this host's, or ``wall``) less the monotonic clock, read so that a preemption
    between the two reads does not count (the tightest of ``tries`` bracketed reads)."""
    read_wall = wall or time.time
    best = (float("inf"), 0.0)
    for _ in range(tries):
        m1 = time.monotonic()
        w = read_wall()
        m2 = time.monotonic()
        if m2 - m1 < best[0]:
            best = (m2 - m1, w - (m1 + m2) / 2)
    return best[1]
