"""The Docker backend: one private bridge network and N node containers per run.

Everything it creates carries the labels ``chaos.project=chaos`` and ``chaos.run=<run id>`` so that
teardown removes exactly this run's resources and ``chaos cleanup`` can find a crashed run's
leftovers without touching anything else on the engine.

Processes inside a node are reached from the host: a named process writes its pid file, and the
host maps that pid to its own pid namespace to signal it directly (the container's PID 1 would
ignore signals sent from inside). Files are read and written through ``/proc/<pid>/root``, and
network commands run with ``nsenter`` in the node's network namespace, using the host's tools.

The run's bridge is confined on the host side before any node exists (chaos.cluster.docker.firewall:
the nodes reach each other, and nothing of the host or any other network).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shlex
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types

from chaos.cluster.base import ClusterError, ExecResult, node_names
from chaos.cluster.docker import firewall, hidepid, procfs
from chaos.cluster.docker.quota import (
    Quotas,
    describe,
    files_full,
    full,
    join,
    mount_live,
    services_groups,
    unmount_keeping,
)
from chaos.cluster.docker.resources import (
    LABEL_LIVE,
    LABEL_OWNER,
    LABEL_PROJECT,
    LABEL_RUN,
    PROJECT,
    engine,
    remove_run,
)
from chaos.cluster.node_kit import proctable
from chaos.cluster.node_kit.owner import owner_token
from chaos.histories.files import read_regular, write_atomic

# a service's log beyond this is cut when the run's logs are collected
LOG_CAP = 32 << 20
SRC_MOUNT = "/opt/chaos-src"
LIVE_MOUNT = "/chaos"


@dataclass(frozen=True, slots=True)
class NodeLimits:
    """What one node may use. A lab3 node peaks near 250 MB and 120 tasks (etcd, the broker on
    n1, three Python services; measured in docs/security.md); the limits leave several times
    that, so that only a runaway solution (a fork storm, a leak, a spin) meets them."""

    memory: str = "1g"
    pids: int = 512
    cpus: float = 1.0
    # the nodes' own processes need no capability but the two that let a root shell drop to the
    # service user (setpriv); faults act from the host's namespaces, not from inside (so does
    # the remount of the node's /proc that hides the services from each other: hidepid.hide)
    capabilities: tuple[str, ...] = ("SETUID", "SETGID")


class DockerCluster:
    """A cluster of containers on a private network. Use as a context manager: exit tears down."""

    def __init__(
        self,
        *,
        run_id: str,
        nodes: int,
        image: str,
        src_dir: Path,
        live_dir: Path,
        extra_mounts: dict[str, str] | None = None,
        client: docker.DockerClient | None = None,
        limits: NodeLimits | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        self.run_id = run_id
        self.nodes = node_names(nodes)
        self._client = client or engine()
        self._image = image
        self._src = src_dir.resolve()
        self._live = live_dir.resolve()
        self._mounts = extra_mounts or {}
        self._limits = limits or NodeLimits()
        self._quotas = quotas or Quotas()
        self._live_mounts: list[Path] = []
        # node -> the cgroup.procs of its services' memory and tasks groups
        self._groups: dict[str, list[Path]] = {}
        self._containers: dict[str, Any] = {}
        self._init_pid: dict[str, int] = {}
        self._addr: dict[str, str] = {}
        self._network: Any = None
        self._host_pid_cache: dict[tuple[str, int], int] = {}
        self._service_slots: dict[str, dict[str, int]] = {}  # node -> service -> its uid's slot

    @property
    def labels(self) -> dict[str, str]:
        # the owner's pid and start time let `chaos cleanup` tell a crashed run from a live one
        return {
            LABEL_PROJECT: PROJECT,
            LABEL_RUN: self.run_id,
            LABEL_OWNER: owner_token(os.getpid()),
            LABEL_LIVE: str(self._live),
        }

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        name = f"chaos-{self.run_id}"
        self._isolated_network(name)
        self._confine_live()
        volumes = self._volumes()
        # side by side too: each create is two calls the engine answers (the log volume, the
        # container), mostly waiting; whatever was made before one fails is labelled with the
        # run, and teardown removes it by that label
        with ThreadPoolExecutor(max_workers=len(self.nodes) or 1) as pool:
            made = [pool.submit(self._create_node, node, name, volumes) for node in self.nodes]
            for node, f in zip(self.nodes, made, strict=True):
                self._containers[node] = f.result()
        # side by side: a start is the engine's network and mount set-up, mostly waiting, and
        # three in a row were most of bring-up's first second
        with ThreadPoolExecutor(max_workers=len(self._containers) or 1) as pool:
            for f in [pool.submit(c.start) for c in self._containers.values()]:
                f.result()
        for node, c in self._containers.items():
            c.reload()
            self._init_pid[node] = int(c.attrs["State"]["Pid"])
            self._addr[node] = c.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
            # before anything of the code under test runs there: a service sees its own
            # processes in /proc and nobody else's (each runs as a uid of its own)
            hidepid.hide(self._init_pid[node])

    def _isolated_network(self, name: str) -> None:
        """The run's bridge, closed off before any node exists on it."""
        # internal: the nodes reach each other and the host reaches them, nothing else is routed
        self._network = self._client.networks.create(
            name, driver="bridge", labels=self.labels, check_duplicate=True, internal=True
        )
        # and the host answers them on none of its addresses, nor forwards them anywhere: before
        # any node exists (recorded first, so the reaper finds it after a crash)
        firewall.install(
            firewall.Record(
                run_id=self.run_id, bridge=bridge_of(self._network), owner=self.labels[LABEL_OWNER]
            )
        )

    def _confine_live(self) -> None:
        """Sized tmpfs mounts where the services write in the live folder, before any node
        sees it."""
        try:
            self._live_mounts = mount_live(self._live, self._quotas)
        except OSError as e:  # not root, or no tmpfs: the run cannot be confined
            msg = f"{e} (the Docker backend mounts sized tmpfs folders as root)"
            raise ClusterError(msg) from None

    def _volumes(self) -> dict[str, dict[str, str]]:
        """What every node mounts: only chaos's own package, never the checkout around it
        (other runs' stores live there), the live folder, and the extra read-only mounts."""
        volumes = {
            str(self._src / "chaos"): {"bind": f"{SRC_MOUNT}/chaos", "mode": "ro"},
            str(self._live): {"bind": LIVE_MOUNT, "mode": "rw"},
        }
        for host, inside in self._mounts.items():
            # a relative path would be taken for a named volume
            volumes[str(Path(host).resolve())] = {"bind": inside, "mode": "ro"}
        return volumes

    def _create_node(self, node: str, network: str, volumes: dict[str, dict[str, str]]) -> Any:
        """One node's container (created, not started) and its sized log volume, both labelled
        with the run: removed with it, and by the reaper."""
        log_path, log_size = self._quotas.logs
        logs = self._client.volumes.create(
            name=f"chaos-{self.run_id}-{node}-logs",
            driver="local",
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": f"size={log_size},mode=755"},
            labels=self.labels,
        )
        return self._client.containers.create(
            self._image,
            command=["sleep", "infinity"],
            name=f"chaos-{self.run_id}-{node}",
            hostname=node,
            labels={**self.labels, "chaos.node": node},
            init=True,
            volumes=volumes,
            network=network,
            environment={"CHAOS_NODE": node},
            detach=True,
            mem_limit=self._limits.memory,
            memswap_limit=self._limits.memory,
            pids_limit=self._limits.pids,
            nano_cpus=int(self._limits.cpus * 1e9),
            cap_drop=["ALL"],
            cap_add=list(self._limits.capabilities),
            security_opt=["no-new-privileges:true"],
            # nothing lands in the container layer (it has no size): every writable path is
            # a sized tmpfs (see chaos.cluster.docker.quota)
            read_only=True,
            tmpfs=self._quotas.node_tmpfs(),
            mounts=[docker.types.Mount(log_path, logs.name, type="volume")],
            shm_size=self._quotas.shm,
        )

    def teardown(self) -> None:
        try:
            remove_run(self._client, self.run_id)
        finally:
            while self._live_mounts:
                unmount_keeping(self._live_mounts.pop())

    def __enter__(self) -> DockerCluster:
        try:
            self.start()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    # ------------------------------------------------------------ nodes

    def address(self, node: str) -> str:
        return self._addr[node]

    def container_name(self, node: str) -> str:
        return str(self._containers[node].name)

    def live_path(self) -> str:
        return LIVE_MOUNT

    def reap_handle(self, node: str, process: str | None = None) -> str | None:
        """A process: ``hostpid:starttime`` (a bare pid could be reused after a crash); a node:
        its container's name. What ``chaos cleanup`` needs to heal a dead run in place."""
        if process is None:
            return self.container_name(node)
        hp = self.host_pid(node, process)
        return None if hp is None else owner_token(hp)

    def _root(self, node: str) -> Path:
        return Path(f"/proc/{self._init_pid[node]}/root")

    def exec(self, node: str, argv: list[str], *, timeout: float = 60.0) -> ExecResult:
        # `docker exec` through the CLI honours a timeout; the SDK's exec_run has none
        cmd = ["docker", "exec", self.container_name(node), *argv]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ExecResult(124, f"timed out after {timeout}s: {shlex.join(argv)}")
        return ExecResult(p.returncode, p.stdout + p.stderr)

    def spawn(
        self,
        node: str,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> int:
        if self.pid(node, name) is not None:
            raise ClusterError(f"{name} is already running on {node}")
        pidfile = f"/run/chaos/{name}.pid"
        pf = self._root(node) / pidfile.lstrip("/")
        if pf.exists():
            pf.unlink()
        run = argv
        if user is not None:
            # the root shell opens the log and writes the pid file (both out of the service's
            # reach), then setpriv drops to the user for good (no-new-privileges on the node);
            # before that: the first the kernel's OOM killer takes, and its own limits
            uid, _, gid = self.service_uid(node, user, name).partition(":")
            q = self._quotas
            run = ["choom", "-n", "1000", "--",
                   "prlimit", f"--nproc={q.tasks}", f"--fsize={q.file_bytes}",
                   f"--nofile={q.open_files}", "--",
                   "setpriv", f"--reuid={uid}", f"--regid={gid or uid}", "--clear-groups", "--",
                   *argv]  # fmt: skip
        go = f"/run/chaos/{name}.go"
        # a service waits until the host moved its shell into the services' groups, so
        # that nothing it starts is outside (the shell's pid is the service's after exec)
        wait = f"while [ ! -e {go} ]; do sleep 0.01; done; " if user is not None else ""
        script = (
            f"mkdir -p /run/chaos /var/log/chaos; rm -f {go}; echo $$ > {pidfile}; {wait}"
            f"exec {shlex.join(run)} >> /var/log/chaos/{name}.log 2>&1"
        )
        c = self._containers[node]
        c.exec_run(["sh", "-c", script], environment=env or {}, detach=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pid = self.pid(node, name)
            if pid is not None:
                if user is not None:
                    self._into_services_group(node, name)
                return pid
            time.sleep(0.02)
        raise ClusterError(f"{name} did not start on {node}; see its log in the run's logs/")

    def _into_services_group(self, node: str, name: str) -> None:
        groups = self._groups.get(node)
        if groups is None:
            q = self._quotas
            groups = services_groups(self._init_pid[node], q.service_memory, q.tasks)
            self._groups[node] = groups
        hp = self.host_pid(node, name)
        for procs in groups:
            if hp is not None:
                join(procs, hp)
        # /run/chaos is root's in the node: nothing the services wrote is on this path
        write_atomic(self._root(node) / "run" / "chaos" / f"{name}.go", b"", durable=False)

    def service_uid(self, node: str, user: str, name: str) -> str:
        """The uid:gid ``user`` runs ``name`` as on ``node``. ``nobody`` becomes a uid of this
        run, node and service alone:

        - the kernel counts a uid's tasks across the whole host (containers without a user
          namespace share one count), so with one uid for every run a fork storm in one run would
          starve the services of every other; and the node's root (etcd, the broker) keeps what
          the pids limit leaves above the services' task limit;
        - a service may signal, trace and (with the node's /proc mounted ``hidepid``) see only
          processes of its own uid: with one uid per service none of them sees, stops or kills
          a sibling (a paused worker is in state ``T`` to anyone who can read its ``stat``).

        A service started again gets the uid it had (its events file and claims are its own)."""
        if user != "nobody":
            return user
        slots = self._service_slots.setdefault(node, {})
        if name not in slots:
            if len(slots) >= SERVICES_PER_NODE:
                raise ClusterError(
                    f"{node}: more than {SERVICES_PER_NODE} services, each needs a uid of its own"
                )
            slots[name] = len(slots)
        h = int(hashlib.sha256(self.run_id.encode()).hexdigest()[:8], 16)
        uid = service_uid_of(h, self.nodes.index(node), slots[name])
        return f"{uid}:{uid}"

    def over_quota(self) -> list[str]:
        """Each sized path the code under test filled (to within 2 % or 1 MiB of its size)."""
        out = []
        for target in self._live_mounts:
            got = full(target)
            if got is not None:
                out.append(f"live/{target.name} ({describe(got[1])})")
            files = files_full(target)
            if files is not None:
                out.append(f"live/{target.name} ({files - 1} files)")
        for node, pid in sorted(self._init_pid.items()):
            for path in self._quotas.sized_paths():
                got = full(f"/proc/{pid}/root{path}")
                if got is not None:
                    out.append(f"{path} on {node} ({describe(got[1])})")
        return out

    def _ns_pid(self, node: str, name: str) -> int | None:
        # only the node's root shell writes /run/chaos; read it as if anyone could, anyway
        try:
            text = read_regular(self._root(node) / f"run/chaos/{name}.pid", 64).strip()
            return int(text) if text.isdigit() else None
        except OSError:
            return None

    def _host_pid(self, node: str, ns_pid: int) -> int | None:
        key = (node, ns_pid)
        cached = self._host_pid_cache.get(key)
        if (
            cached is not None
            and procfs.ns_pid_of(cached) == ns_pid
            and procfs.same_pidns(cached, self._init_pid[node])
        ):
            return cached
        init = self._init_pid[node]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            hp = int(entry)
            if procfs.ns_pid_of(hp) == ns_pid and procfs.same_pidns(hp, init):
                self._host_pid_cache[key] = hp
                return hp
        return None

    def host_pid(self, node: str, name: str) -> int | None:
        ns = self._ns_pid(node, name)
        return None if ns is None else self._host_pid(node, ns)

    def socket_owner(
        self, node: str, names: Sequence[str], local_port: int, remote_port: int
    ) -> str | None:
        inode = procfs.tcp_inode(self._init_pid[node], local_port, remote_port)
        if inode is None:
            return None
        for name in names:
            hp = self.host_pid(node, name)
            if hp is not None and any(
                procfs.holds_socket(p, inode) for p in procfs.descendants(hp)
            ):
                return name
        return None

    def pid(self, node: str, name: str) -> int | None:
        ns = self._ns_pid(node, name)
        if ns is None:
            return None
        hp = self._host_pid(node, ns)
        if hp is None or not proctable.alive(hp):
            return None
        return ns

    def signal(self, node: str, name: str, sig: int) -> int | None:
        hp = self.host_pid(node, name)
        if hp is None:
            return None
        try:
            os.kill(hp, sig)
        except ProcessLookupError:
            return None
        return self._ns_pid(node, name)

    def process_state(self, node: str, name: str) -> str | None:
        hp = self.host_pid(node, name)
        return None if hp is None else proctable.state(hp)

    def ns_command(self, node: str) -> list[str]:
        return ["nsenter", "-t", str(self._init_pid[node]), "-n"]

    def net_exec(self, node: str, argv: list[str]) -> ExecResult:
        cmd = [*self.ns_command(node), *argv]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return ExecResult(p.returncode, p.stdout + p.stderr)

    # Files go through the engine's archive API, never through /proc/<pid>/root on the host: there
    # an absolute link a node planted would resolve on the host, and a FIFO would block.

    def put_file(self, node: str, path: str, data: bytes) -> None:
        parent, _, name = path.rstrip("/").rpartition("/")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        self._containers[node].put_archive(parent or "/", buf.getvalue())

    def get_file(self, node: str, path: str) -> bytes | None:
        files = self._get_tree(node, path, limit=LOG_CAP)
        return next(iter(files.values()), None) if len(files) == 1 else None

    def _get_tree(
        self, node: str, path: str, *, limit: int, want: Callable[[str], bool] = lambda _: True
    ) -> dict[str, bytes]:
        """Regular files under ``path`` in the node (links, FIFOs, devices skipped) whose name
        ``want``s, each cut at ``limit`` bytes, by their name relative to ``path``'s parent.

        The archive is read as a stream, one member at a time: what the orchestrator holds is
        the files it keeps, never the whole archive (a proxy journal of 90 MB beside the logs
        was buffered whole, on each node at once)."""
        try:
            stream, _ = self._containers[node].get_archive(path)
        except docker.errors.APIError:
            return {}
        out: dict[str, bytes] = {}
        reader = _ChunkReader(stream)
        try:
            with tarfile.open(fileobj=reader, mode="r|") as tar:
                for m in tar:
                    if m.isreg() and want(m.name):
                        fh = tar.extractfile(m)
                        if fh is not None:
                            out[m.name] = fh.read(limit)
        except tarfile.TarError:
            pass
        finally:
            reader.drain()
        return out

    def collect_logs(self, dest: Path) -> None:
        def one(node: str) -> None:
            out = dest / node
            out.mkdir(parents=True, exist_ok=True)
            tree = self._get_tree(node, "/var/log/chaos", limit=LOG_CAP, want=_a_log)
            for name, data in tree.items():
                with contextlib.suppress(OSError):
                    write_atomic(out / name.rsplit("/", 1)[-1], data, durable=False)

        # one archive request per node, side by side: teardown waits for the slowest only
        made = [n for n in self.nodes if n in self._containers]  # a start that failed midway
        with ThreadPoolExecutor(max_workers=len(made) or 1) as pool:
            list(pool.map(one, made))

    # ------------------------------------------------------------ freeze (cgroup freezer)

    def freeze(self, node: str) -> None:
        pause_retrying(self._containers[node])

    def thaw(self, node: str) -> None:
        c = self._containers[node]
        c.reload()
        if c.status == "paused":
            c.unpause()

    def freezer_state(self, node: str) -> str | None:
        """``FROZEN``, ``FREEZING`` or ``THAWED`` as the kernel's freezer reports the node's cgroup."""
        return procfs.freezer_state(self._init_pid[node])


# The service uids: a block of RUN_UIDS per run (from a hash of its id), in it SERVICES_PER_NODE
# per node, one per service; every uid of the layout is below 2**31 (tools that read a uid as a
# signed int), far above the image's own users.
UID_BASE = 1_000_000
SERVICES_PER_NODE = 64
RUN_UIDS = SERVICES_PER_NODE * 64  # nodes per run
RUN_BLOCKS = 500_000


def service_uid_of(run_hash: int, node_index: int, slot: int) -> int:
    """The uid of service ``slot`` of node ``node_index`` in the run whose id hashes to
    ``run_hash``: distinct for every service of a run (a node's services never share one)."""
    if not 0 <= slot < SERVICES_PER_NODE or not 0 <= node_index < RUN_UIDS // SERVICES_PER_NODE:
        raise ClusterError(f"no service uid for node {node_index + 1}, service {slot + 1}")
    return UID_BASE + (run_hash % RUN_BLOCKS) * RUN_UIDS + node_index * SERVICES_PER_NODE + slot


# runc gives up on a cgroup whose tasks do not all freeze within its own short wait (a loaded
# machine, a task in the middle of a fork) and thaws it again: "unable to freeze". Tried again.
FREEZE_ATTEMPTS = 5
FREEZE_RETRY_PAUSE = 0.2


def pause_retrying(container: Any, attempts: int = FREEZE_ATTEMPTS) -> None:
    """``container.pause()``, tried again while the runtime answers "unable to freeze" (it left
    the container running); any other error, or the last attempt's, is raised."""
    for attempt in range(1, attempts + 1):
        try:
            container.pause()
            return
        except docker.errors.APIError as e:
            if attempt == attempts or "unable to freeze" not in str(e):
                raise
            time.sleep(FREEZE_RETRY_PAUSE)


def bridge_of(network: Any) -> str:
    """The host interface of a bridge network (Docker's ``br-<id>`` unless it was named)."""
    opts = network.attrs.get("Options") or {}
    name = str(opts.get("com.docker.network.bridge.name") or f"br-{network.id[:12]}")
    if not Path("/sys/class/net", name).exists():
        raise ClusterError(f"network {network.name}: no bridge {name} on this host to confine")
    return name


def _a_log(name: str) -> bool:
    """A service's or a server's log, directly in the logs folder (the proxies' journals,
    beneath it, are collected on their own)."""
    return name.endswith(".log") and "/" not in name.removeprefix("chaos/")


class _ChunkReader(io.RawIOBase):
    """The engine's archive stream (an iterator of byte chunks) as a file ``tarfile`` can read
    as a stream."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not len(self._left):
            nxt = next(self._chunks, None)
            if nxt is None:
                return 0
            self._left = memoryview(nxt)
        n = min(len(b), len(self._left))
        b[:n] = self._left[:n]
        self._left = self._left[n:]
        return n

    def drain(self) -> None:
        """Read the stream to its end (the engine's connection is then free), keeping nothing."""
        self._left = memoryview(b"")
        for _ in self._chunks:
            pass
