"""The SSH cluster: named processes, files, faults and events on machines reached only by SSH.

Each node gets a folder of the run's own, ``/var/lib/chaos/runs/<run id>``::

    live/events/  the services' event files (collected to the orchestrator as the run goes)
    live/control/ fault points and holds (replicated from the orchestrator, see ControlChannel)
    src/          chaos's source (PYTHONPATH), uploaded     mnt/<i>/  the solution, uploaded
    data/  log/  pids/  owner.json

Workloads speak of node paths as the Docker node image lays them out (``/chaos``, ``/data``,
``/opt/chaos-src``, ``/opt/solution``, ``/var/log/chaos``, ``/run/chaos``); this backend maps those
prefixes into the run's folder in every argv, environment value and file path it is given, so that
nothing outside the folder is written and two runs on one machine cannot collide. Processes are
started with ``setsid`` (each leads its own session), write a pid file and log into ``log/``.

Node clocks: each node's CLOCK_MONOTONIC is compared with the orchestrator's at start and at
teardown (``clock.py``); collected events are moved onto the orchestrator's axis with the start
estimate, keep their own reading as ``node_mono``, and the estimates go to ``<live>/clocks.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chaos.cluster.base import ClusterError, ExecResult
from chaos.cluster.node_kit import proctable
from chaos.cluster.node_kit.owner import owner_token
from chaos.cluster.ssh import clock, install, remote
from chaos.cluster.ssh.conn import Connection
from chaos.cluster.ssh.control import ControlFiles
from chaos.cluster.ssh.events import EventCollector
from chaos.cluster.ssh.nodes import NodeSpec
from chaos.node.runtime import ARBITER_ENV

# how long a process status read stays fresh (the supervisor asks about every process ten times a
# second)
STATUS_TTL = 0.05
CLOCK_SAMPLES = 16

_CLOCK_PROBE = (
    "python3 -u -c 'import sys,time\nfor _ in sys.stdin: print(repr(time.monotonic()), flush=True)'"
)


def _pmap(fn: Any, items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        return list(pool.map(fn, items))


class SSHCluster:
    """Nodes from a nodes file, reached over one kept-open connection each."""

    def __init__(
        self,
        *,
        run_id: str,
        nodes: list[NodeSpec],
        conns: dict[str, Connection],
        venvs: dict[str, str],
        src_dir: Path,
        live_dir: Path,
        mounts: dict[str, str],
    ) -> None:
        self.run_id = run_id
        self.nodes = [n.name for n in nodes]
        self._spec = {n.name: n for n in nodes}
        self._conns = conns
        self._venv = venvs
        self._src = src_dir
        self._live = live_dir.resolve()
        self._mounts = mounts
        self._dir = remote.run_dir(run_id)
        self._addr: dict[str, str] = {}
        self._status: dict[str, tuple[float, dict[str, tuple[int, bool, str]]]] = {}
        self._status_lock = threading.Lock()
        self._clocks: dict[str, clock.ClockEstimate] = {}
        self._stop = threading.Event()
        self._started = False
        self._events = EventCollector(
            nodes=self.nodes, conns=conns, folder=f"{self._dir}/live/events", live=self._live,
            clocks=self._clocks,
        )  # fmt: skip
        self._control = ControlFiles(
            nodes=self.nodes, conns=conns, folder=f"{self._dir}/live/control", stop=self._stop
        )
        # node path prefix (as the Docker image lays them out) -> the run's own folder; longest first
        prefixes = {
            "/chaos": f"{self._dir}/live",
            "/opt/chaos-src": f"{self._dir}/src",
            "/data": f"{self._dir}/data",
            "/var/log/chaos": f"{self._dir}/log",
            "/run/chaos": f"{self._dir}/pids",
        }
        for i, inside in enumerate(sorted(mounts.values())):
            prefixes[inside] = f"{self._dir}/mnt/{i}"
        self._map = sorted(prefixes.items(), key=lambda kv: -len(kv[0]))

    # ------------------------------------------------------------ paths

    def node_path(self, path: str) -> str:
        """A path as workloads name it, mapped into this run's folder on the node."""
        for prefix, real in self._map:
            if path == prefix or path.startswith(prefix + "/"):
                return real + path[len(prefix) :]
        return path

    def _argv(self, node: str, argv: list[str]) -> list[str]:
        out = [self.node_path(a) for a in argv]
        if out and out[0] == sys.executable:
            # probes run "the host's Python": here the node's own
            out[0] = f"{self._venv[node]}/bin/python3"
        return out

    def _env(self, node: str, env: dict[str, str] | None) -> dict[str, str]:
        venv = self._venv[node]
        base = {
            "PATH": f"{venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PYTHONPATH": f"{self._dir}/src",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "CHAOS_NODE": node,
            ARBITER_ENV: "1",
        }
        return base | {k: self.node_path(v) for k, v in (env or {}).items()}

    def _envline(self, node: str, env: dict[str, str] | None = None) -> str:
        return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in self._env(node, env).items())

    def conn(self, node: str) -> Connection:
        return self._conns[node]

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._started = True
        for n in self.nodes:
            try:
                self._addr[n] = socket.gethostbyname(self._spec[n].host)
            except OSError as e:
                raise ClusterError(f"{self._spec[n].label}: cannot resolve the host: {e}") from e
        src = install.tarball(self._src / "chaos", under="chaos")
        mounts = {host: install.tarball(Path(host)) for host in sorted(self._mounts)}
        owner = json.dumps(
            {
                "run_id": self.run_id,
                "host": socket.gethostname(),
                "owner": owner_token(os.getpid()),
                "live": str(self._live),
            }
        )

        def one(node: str) -> None:
            c = self.conn(node)
            d = self._dir
            dirs = ["live/events", "live/control/any", f"live/control/{node}"]
            dirs += ["src", "data", "log", "pids", "mnt"]
            r = c.run("mkdir -p " + " ".join(f"{d}/{x}" for x in dirs), timeout=20)
            if not r.ok:
                raise ClusterError(f"{c.node.label}: cannot create {d}: {r.output.strip()}")
            c.put(f"{d}/owner.json", owner.encode())
            install.upload_tree(c, src, f"{d}/src")
            for host, data in mounts.items():
                install.upload_tree(c, data, self.node_path(self._mounts[host]))
            self._clocks[node] = self.measure_clock(node)

        _pmap(one, self.nodes)
        self._write_clocks({})
        self._events.start(self._stop)

    def teardown(self) -> None:
        """Stop collecting, measure clocks again, remove every trace of the run from every node."""
        self._stop.set()
        self._events.join()
        self._control.join()
        if not self._started:
            return
        with contextlib.suppress(Exception):
            self.collect_events()
        end: dict[str, clock.ClockEstimate] = {}
        errors: list[str] = []

        def one(node: str) -> None:
            try:
                if node in self._clocks:
                    end[node] = self.measure_clock(node)
            except Exception:  # a node gone: its start estimate stands alone
                pass
            try:
                remote.remove_run(self.conn(node), self.run_id)
            except Exception as e:
                errors.append(f"{node}: {e}")

        _pmap(one, self.nodes)
        self._write_clocks(end)
        self._started = False
        if errors:
            raise ClusterError(
                "teardown left traces on some nodes (run `chaos cleanup --backend ssh "
                f"--nodes-file FILE`): {'; '.join(errors)}"
            )

    def __enter__(self) -> SSHCluster:
        try:
            self.start()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    # ------------------------------------------------------------ clocks

    def measure_clock(self, node: str) -> clock.ClockEstimate:
        """Round trips over one channel to a tiny clock server on the node (see clock.py)."""
        chan = self.conn(node).open_session(f"{self._venv[node]}/bin/{_CLOCK_PROBE}")
        samples = []
        try:
            chan.settimeout(5.0)
            f = chan.makefile("rb")
            for _ in range(CLOCK_SAMPLES):
                t0 = time.monotonic()
                chan.sendall(b"\n")
                line = f.readline()
                t1 = time.monotonic()
                samples.append(clock.Sample(t0=t0, remote=float(line), t1=t1))
        finally:
            chan.close()
        return clock.estimate(samples)

    def _write_clocks(self, end: dict[str, clock.ClockEstimate]) -> None:
        out: dict[str, Any] = {
            "method": "round trips over SSH, shortest round trip wins (NTP's clock filter); "
            "offset = node CLOCK_MONOTONIC - orchestrator CLOCK_MONOTONIC",
            "nodes": {},
        }
        for node, est in sorted(self._clocks.items()):
            rec: dict[str, Any] = {"start": est.to_json()}
            if node in end:
                rec["end"] = end[node].to_json()
                rec["drift"] = clock.drift(est, end[node])
            out["nodes"][node] = rec
        with contextlib.suppress(OSError):
            (self._live / "clocks.json").write_text(json.dumps(out, indent=2) + "\n")

    def clock_estimate(self, node: str) -> clock.ClockEstimate | None:
        return self._clocks.get(node)

    # ------------------------------------------------------------ events (events.py)

    def collect_events(self) -> int:
        """Pull new event lines from every node now; returns how many (see events.py)."""
        return self._events.collect()

    # ------------------------------------------------------------ control files (control.py)

    def control_put(self, folder: str, name: str, data: bytes, *, on: str | None = None) -> None:
        self._control.put(folder, name, data, on=on)

    def control_remove(self, folder: str, name: str) -> None:
        self._control.remove(folder, name)

    def control_exists(self, node: str, folder: str, name: str) -> bool:
        return self._control.exists(node, folder, name)

    # ------------------------------------------------------------ nodes and processes

    def address(self, node: str) -> str:
        return self._addr[node]

    def exec(self, node: str, argv: list[str], *, timeout: float = 60.0) -> ExecResult:
        cmd = f"{self._envline(node)} {shlex.join(self._argv(node, argv))}"
        return self.conn(node).run(cmd, timeout=timeout)

    def _pidfile(self, name: str) -> str:
        return f"{self._dir}/pids/{name}.pid"

    def _read_status(self, node: str) -> dict[str, tuple[int, bool, str]]:
        with self._status_lock:
            cached = self._status.get(node)
            if cached is not None and time.monotonic() - cached[0] < STATUS_TTL:
                return cached[1]
        r = self.conn(node).run(proctable.STATUS.format(pids=f"{self._dir}/pids"), timeout=10)
        if not r.ok:
            raise ClusterError(f"{self._spec[node].label}: reading process status failed")
        out = {n: (s.pid, s.alive, s.state) for n, s in proctable.parse_status(r.output).items()}
        with self._status_lock:
            self._status[node] = (time.monotonic(), out)
        return out

    def _forget_status(self, node: str) -> None:
        with self._status_lock:
            self._status.pop(node, None)

    def spawn(
        self,
        node: str,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> int:
        # ``user`` is not applied here: a service claims its node's copy of a fault point by a
        # rename in the run's folder, which the SSH user owns. On machines the instructor
        # provides, the machine is the confinement (docs/security.md, docs/backends.md).
        del user
        self._forget_status(node)
        if self.pid(node, name) is not None:
            raise ClusterError(f"{name} is already running on {node}")
        pidfile = self._pidfile(name)
        log = f"{self._dir}/log/{name}.log"
        inner = f"echo $$ > {pidfile}; exec {shlex.join(self._argv(node, argv))} >> {log} 2>&1"
        script = (
            f"rm -f {pidfile}; cd {self._dir} && {self._envline(node, env)} "
            f"setsid sh -c {shlex.quote(inner)} < /dev/null > /dev/null 2>&1 &"
        )
        r = self.conn(node).run(script, timeout=15)
        if not r.ok:
            raise ClusterError(f"{name} did not start on {node}: {r.output.strip()}")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self._forget_status(node)
            pid = self.pid(node, name)
            if pid is not None:
                return pid
            time.sleep(0.05)
        raise ClusterError(f"{name} did not start on {node}; see its log in the run's logs/")

    def pid(self, node: str, name: str) -> int | None:
        got = self._read_status(node).get(name)
        return got[0] if got is not None and got[1] else None

    def signal(self, node: str, name: str, sig: int) -> int | None:
        self._forget_status(node)
        pf = self._pidfile(name)
        r = self.conn(node).run(
            f'p=$(cat {pf} 2>/dev/null) && [ -n "$p" ] && kill -{int(sig)} "$p" && echo "$p"',
            timeout=10,
        )
        self._forget_status(node)
        out = r.output.strip().splitlines()
        return int(out[-1]) if r.ok and out and out[-1].isdigit() else None

    def process_state(self, node: str, name: str) -> str | None:
        got = self._read_status(node).get(name)
        return got[2] if got is not None and got[2] != "-" else None

    def net_exec(self, node: str, argv: list[str]) -> ExecResult:
        spec = self._spec[node]
        cmd = shlex.join(self._argv(node, argv))
        return self.conn(node).run(remote.privileged(spec.user, spec.sudo, cmd), timeout=30)

    def put_file(self, node: str, path: str, data: bytes) -> None:
        p = self.node_path(path)
        c = self.conn(node)
        c.run(f"mkdir -p {shlex.quote(os.path.dirname(p))}", timeout=10)
        c.put(p, data)

    def get_file(self, node: str, path: str) -> bytes | None:
        return self.conn(node).get(self.node_path(path))

    def collect_logs(self, dest: Path) -> None:
        for node in self.nodes:
            c = self.conn(node)
            folder = f"{self._dir}/log"
            with contextlib.suppress(Exception):
                names = [n for n in c.listdir_sizes(folder) if n.endswith(".log")]
                out = dest / node
                out.mkdir(parents=True, exist_ok=True)
                for n in names:
                    data = c.get(f"{folder}/{n}")
                    if data is not None:
                        (out / n).write_bytes(data)

    def reap_handle(self, node: str, process: str | None = None) -> str | None:
        """``<node>:<pid>`` of a running process (the reaper's evidence; it also finds stopped
        processes by the run's pid files), None for a node or a process that is gone."""
        if process is None:
            return None
        pid = self.pid(node, process)
        return None if pid is None else f"{node}:{pid}"
