"""Sizes on everything the code under test can write in a Docker run.

A node's root filesystem is read-only (the container layer has no size limit on overlay2 over
ext4, the engine's usual setup: ``--storage-opt size`` needs xfs with project quotas), and every
path a process there can write is a tmpfs of a stated size: ``/tmp``, ``/run``, the logs, the
database's and broker's data, ``/dev/shm``. The two folders of the run's live folder the services
write (``events/``, ``claims/``) are tmpfs mounts on the *host*, also sized, because every node
must see the same folder (a claim is an ``O_EXCL`` create in one shared folder). A tmpfs's pages
are charged to the memory group of whoever wrote them, so the node's memory limit holds too.

The host mounts are named ``chaos-live:<owner pid>:<start time>`` (the orchestrator's
:func:`~chaos.cluster.node_kit.owner.owner_token`), so that the reaper can find and remove those of
an orchestrator that died, with or without containers left. Before a mount is removed its regular
files are copied to the disk folder beneath it (at most its size, since that is all it can hold):
the run keeps its claims and raw events for whoever inspects it.

Processes and memory: each service runs with limits of its own (tasks of its uid, file size, open
files; see ``DockerCluster.spawn``) and in a memory and a tasks group of its node's services
(:func:`services_groups`), so that a fork storm or a hog of the code under test leaves etcd and the
broker, root's processes beside it, what they need.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from chaos.cluster.node_kit.owner import owner_alive, owner_token
from chaos.histories.files import open_regular, read_regular
from chaos.histories.limits import MAX_CLAIM_FILES, MAX_EVENT_FILES

MOUNT_PREFIX = "chaos-live:"


@dataclass(frozen=True, slots=True)
class Quotas:
    """What the code under test can make land, per path. Sizes are tmpfs ``size=`` values."""

    # in each node: path -> (size, mode). /data is root's (etcd's and the broker's files), which
    # the code under test fills only through etcd and the broker themselves.
    node_paths: tuple[tuple[str, str, str], ...] = (
        ("/tmp", "64m", "1777"),
        ("/run", "4m", "755"),
        ("/data", "512m", "755"),
    )
    # the logs: a tmpfs *volume* (the engine's archive API, which collects them, does not see
    # into a container's own tmpfs mounts); root's, written by the services through the fd their
    # root shell opened, each file at most ``file_bytes``
    logs: tuple[str, str] = ("/var/log/chaos", "160m")
    shm: str = "16m"
    # on the host, shared by the run's nodes: the folders of the live folder they write
    live_paths: tuple[tuple[str, str], ...] = (("events", "96m"), ("claims", "8m"))
    # and how many inodes each may hold (the folder itself is one): a flood of empty files stops
    # at the kernel's ENOSPC instead of slowing every listing of the folder
    live_inodes: tuple[tuple[str, int], ...] = (
        ("events", MAX_EVENT_FILES + 1),
        ("claims", MAX_CLAIM_FILES + 1),
    )
    # per service process (the code under test): each file it writes (its log included), the
    # tasks (processes and threads) of its uid, open files
    file_bytes: int = 16 << 20
    tasks: int = 256
    open_files: int = 1024
    # the memory group of a node's services, inside the node's own (1 GiB): what it cannot take
    # is root's (etcd, the broker). A whole lab3 node (30 tasks) peaked at 216 MiB, tmpfs included.
    service_memory: int = 768 << 20

    def node_tmpfs(self) -> dict[str, str]:
        return {path: f"size={size},mode={mode}" for path, size, mode in self.node_paths}

    def sized_paths(self) -> list[str]:
        return [p for p, _, _ in self.node_paths] + [self.logs[0], "/dev/shm"]


def _mount_source() -> str:
    return MOUNT_PREFIX + owner_token(os.getpid())


def mount_live(live: Path, quotas: Quotas) -> list[Path]:
    """Mount a sized tmpfs on each writable folder of ``live`` (empty folders ``make_live`` laid
    out), keeping the folder's mode. Returns what it mounted, for :func:`unmount_keeping`."""
    done: list[Path] = []
    try:
        for name, size in quotas.live_paths:
            target = live / name
            if not target.is_dir():
                continue  # a live folder laid out without it (a test's): nothing writes there
            mode = os.stat(target).st_mode & 0o7777
            inodes = dict(quotas.live_inodes).get(name)
            count = f",nr_inodes={inodes}" if inodes else ""
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}{count},mode={mode:o},nosuid,nodev",
                 _mount_source(), str(target)],
                check=True, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            done.append(target)
    except subprocess.CalledProcessError as e:
        for t in done:
            unmount_keeping(t)
        raise OSError(f"cannot mount a tmpfs on {live}: {e.stderr.strip()}") from None
    return done


def unmount_keeping(target: Path) -> None:
    """Copy the regular files directly in ``target`` (a tmpfs) to the folder beneath it, then
    unmount it. Links, FIFOs and sub-folders are left out: the code under test made them. The
    copy streams through a folder beside ``target`` (it cannot be written beneath while mounted),
    so neither memory nor disk holds more than the mount's size."""
    keep = target.with_name(f".{target.name}.kept-{os.getpid()}")
    with contextlib.suppress(OSError):
        keep.mkdir(mode=0o700)
        for entry in os.scandir(target):
            if entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    _copy(Path(entry.path), keep / entry.name)
    p = subprocess.run(["umount", str(target)], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        # busy (a process of ours still has a file open): detach it, it goes when that closes
        subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=30)
    if keep.is_dir():
        if not is_tmpfs_of_ours(target):
            for f in keep.iterdir():
                with contextlib.suppress(OSError):
                    os.replace(f, target / f.name)
        shutil.rmtree(keep, ignore_errors=True)


def _copy(src: Path, dst: Path) -> None:
    fd = open_regular(src)
    with os.fdopen(fd, "rb") as fin:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        out = os.open(dst, flags, 0o644)
        with os.fdopen(out, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)


def is_tmpfs_of_ours(path: Path) -> bool:
    return any(p == str(path) for p, _ in _our_mounts())


def _our_mounts() -> list[tuple[str, str]]:
    """(mount point, source) of every chaos tmpfs in this mount namespace."""
    out = []
    try:
        text = read_regular(Path("/proc/self/mounts"), 16 << 20).decode(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith(MOUNT_PREFIX) and parts[2] == "tmpfs":
            # /proc/self/mounts escapes spaces and the like as octal
            point = parts[1].encode().decode("unicode_escape")
            out.append((point, parts[0]))
    return out


def reap_mounts() -> list[str]:
    """Unmount (keeping their files) the live tmpfs mounts of orchestrators that are gone."""
    done = []
    for point, source in _our_mounts():
        if owner_alive(source.removeprefix(MOUNT_PREFIX)):
            continue
        unmount_keeping(Path(point))
        done.append(f"unmounted {point}")
    return done


def full(path: str | Path, *, margin: int = 1 << 20) -> tuple[int, int] | None:
    """(used, size) of the filesystem at ``path`` when less than ``margin`` bytes (or 2 %) are
    left, else None (also when it cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    size = st.f_blocks * st.f_frsize
    free = st.f_bavail * st.f_frsize
    if size and free < max(margin, size // 50):
        return size - free, size
    return None


def files_full(path: str | Path) -> int | None:
    """How many inodes the filesystem at ``path`` has when none is left (a flood of files), else
    None (also when it has no count, or cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_files if st.f_files and st.f_ffree == 0 else None


GROUP = "chaos-services"


def services_groups(init_pid: int, memory: int, tasks: int) -> list[Path]:
    """The ``cgroup.procs`` of the groups of a node's services, children of the node's own made
    on first use: memory (``memory``, and memory+swap where the kernel counts it) and tasks
    (``tasks`` processes and threads of all its services together: each service has a uid, and
    so a task limit, of its own, and these limits summed pass the node's pids limit that etcd
    and the broker share). A hierarchy the host lacks (no cgroup v1 memory or pids) is left
    out: the services then share the node's. The engine removes them with the container (runc
    removes a group's children)."""
    try:
        text = read_regular(Path(f"/proc/{init_pid}/cgroup"), 1 << 16).decode()
    except OSError:
        return []
    out = []
    for controller, limits in (
        ("memory", {"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory}),
        ("pids", {"pids.max": tasks}),
    ):
        procs = _child_group(text, controller, limits)
        if procs is not None:
            out.append(procs)
    return out


def _child_group(cgroups: str, controller: str, limits: dict[str, int]) -> Path | None:
    rel = next(
        (ln.split(":", 2)[2] for ln in cgroups.splitlines() if ln.split(":")[1:2] == [controller]),
        None,
    )
    if rel is None:
        return None
    group = Path("/sys/fs/cgroup") / controller / rel.lstrip("/") / GROUP
    try:
        group.mkdir(exist_ok=True)
        for name, value in limits.items():
            if (group / name).exists():  # memsw: only where the kernel counts swap
                (group / name).write_text(str(value))
    except OSError:
        return None
    return group / "cgroup.procs"


def join(procs: Path, host_pid: int) -> bool:
    try:
        procs.write_text(str(host_pid))
        return True
    except OSError:
        return False


def describe(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB"


__all__ = [
    "MOUNT_PREFIX",
    "Quotas",
    "describe",
    "full",
    "is_tmpfs_of_ours",
    "join",
    "mount_live",
    "reap_mounts",
    "services_groups",
    "unmount_keeping",
]
