"""A node's ``/proc`` shows a service its own processes only.

Without it any process in a node reads any other's ``/proc/<pid>/stat``: a sibling of a paused
worker sees it in state ``T`` within milliseconds, a fault announced before it can matter (issue
29). The node's ``/proc`` is remounted ``hidepid=2`` (``invisible``): a process's directory is
there only for processes of its own uid (each service runs as a uid of its own, see
``DockerCluster.service_uid``) and for members of the mount's group, root's (``gid=0``), so that
the node's root — its init, etcd, the broker, the etcd proxies, the clock probes — still sees
every process. The services hold no group but their own (``setpriv --clear-groups``).

The remount is the host's, from outside the node (``nsenter`` into its mount namespace, before
any service starts): the node itself keeps no capability but SETUID and SETGID, and needs none
for it. The host's own ``/proc``, which the orchestrator reads for pids, states and sockets
(``chaos.cluster.docker.procfs``), is another mount of another pid namespace and is unchanged.
"""

from __future__ import annotations

import subprocess

from chaos.cluster.base import ClusterError

# a remount sets the mount's flags anew: nosuid, nodev and noexec, as the engine mounted it, kept
OPTIONS = "remount,nosuid,nodev,noexec,hidepid=2,gid=0"
# how mountinfo shows the option (kernels since 5.8 print the name, older ones the number)
SHOWN = ("hidepid=invisible", "hidepid=2")


def hide(init_pid: int) -> None:
    """Remount the ``/proc`` of the node whose init is host pid ``init_pid`` so that a process
    sees only its own uid's processes; raises ClusterError, with the kernel's answer, when the
    remount fails or did not take."""
    argv = ["nsenter", "-t", str(init_pid), "-m", "mount", "-o", OPTIONS, "/proc"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ClusterError(f"could not remount the node's /proc with hidepid: {e}") from None
    if p.returncode != 0:
        why = (p.stdout + p.stderr).strip()
        raise ClusterError(f"could not remount the node's /proc with hidepid: {why}")
    if not hides(init_pid):
        raise ClusterError(
            "the node's /proc was remounted but does not show hidepid: a service would see "
            "the others' processes"
        )


def hides(init_pid: int) -> bool:
    """Whether the node's ``/proc`` (as its init sees its mounts, read from the host) hides
    other uids' processes and still forbids set-uid, devices and executables on it."""
    try:
        with open(f"/proc/{init_pid}/mountinfo") as fh:
            return shows_hidepid(fh.read())
    except OSError:
        return False


def shows_hidepid(mountinfo: str) -> bool:
    """:func:`hides`, read from the text of a ``/proc/<pid>/mountinfo``."""
    seen = False  # the last mount on /proc is the one a process there sees
    for line in mountinfo.splitlines():
        # id parent dev root mountpoint mount-options [optional...] - fstype source super-options
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 6 or len(rest) < 3:
            continue
        if fields[4] == "/proc" and rest[0] == "proc":
            flags, sup = set(fields[5].split(",")), set(rest[2].split(","))
            seen = {"nosuid", "nodev", "noexec"} <= flags and bool(sup & set(SHOWN))
    return seen
