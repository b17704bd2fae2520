"""What the host's /proc says about processes inside the run's containers.

The Docker backend reaches a node's processes from the host: a named process's pid as the node
sees it maps to a host pid in the same pid namespace, whose state, threads and cgroup /proc shows.
Linux-only, and only meaningful on the machine that runs the Docker engine. Whether a process runs
and its state letter are read as every backend reads them (``chaos.cluster.node_kit.proctable``).
"""

from __future__ import annotations

import os
from pathlib import Path


def freezer_state(host_pid: int) -> str | None:
    """The cgroup freezer's state for a process (cgroup v1 ``freezer.state``, or v2 ``cgroup.events``)."""
    try:
        with open(f"/proc/{host_pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            try:
                return Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text().strip()
            except OSError:
                return None
    for line in lines:
        if line.startswith("0::"):
            try:
                events = Path(f"/sys/fs/cgroup{line[3:]}/cgroup.events").read_text()
            except OSError:
                return None
            return "FROZEN" if "frozen 1" in events else "THAWED"
    return None


def ns_pid_of(host_pid: int) -> int | None:
    try:
        with open(f"/proc/{host_pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    return None


def same_pidns(a: int, b: int) -> bool:
    try:
        return os.readlink(f"/proc/{a}/ns/pid") == os.readlink(f"/proc/{b}/ns/pid")
    except OSError:
        return False


def pidns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def pids_in(init_pid: int) -> list[int]:
    """Every host pid in the same pid namespace as ``init_pid`` (a container's processes)."""
    ns = pidns(init_pid)
    if ns is None:
        return []
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and pidns(int(e)) == ns]


def tcp_inode(host_pid: int, local_port: int, remote_port: int) -> int | None:
    """The socket inode of the loopback TCP connection ``127.0.0.1:local_port`` →
    ``127.0.0.1:remote_port`` in ``host_pid``'s network namespace (its ``/proc/<pid>/net/tcp``)."""
    want = (f"0100007F:{local_port:04X}", f"0100007F:{remote_port:04X}")
    try:
        with open(f"/proc/{host_pid}/net/tcp") as fh:
            next(fh, None)
            for line in fh:
                f = line.split()
                if len(f) > 9 and (f[1], f[2]) == want:
                    return int(f[9]) or None
    except (OSError, ValueError):
        return None
    return None


def descendants(host_pid: int) -> list[int]:
    """``host_pid`` and every process below it (the kernel's ``children`` lists: a parent link
    the process cannot forge)."""
    out: list[int] = []
    todo = [host_pid]
    while todo and len(out) < 4096:
        pid = todo.pop()
        out.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
    return out


def holds_socket(host_pid: int, inode: int) -> bool:
    """Whether ``host_pid`` has socket ``inode`` open (read by the host's root, which may read any
    process's descriptors; the node's own root may not)."""
    link = f"socket:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{host_pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{host_pid}/fd/{fd}") == link:
                return True
        except OSError:
            continue
    return False
