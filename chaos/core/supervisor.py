"""Keeps the system's named processes running, as a process supervisor on the nodes would.

A process that exits on its own (a lab fault point crashes it, or it hits a bug) is restarted after
``restart_delay``. A nemesis that kills a process on purpose first ``hold``s it, so that the restart
happens when the nemesis says, not before.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cluster import clocks
from chaos.cluster.base import Cluster


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpec:
    """A named process the run keeps running on a node.

    ``infrastructure`` marks what the code under test runs on (a database member, a broker) as
    opposed to the service itself: a fault meant for "some service process" leaves it alone.
    """

    node: str
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    role: str = ""
    infrastructure: bool = False
    # the unprivileged user the process runs as (the code under test does); None: the node's own
    user: str | None = None


class Supervisor:
    def __init__(
        self,
        cluster: Cluster,
        *,
        restart_delay: float = 1.0,
        on_exit: Callable[[ProcessSpec], None] | None = None,
        on_restart: Callable[[ProcessSpec, int], None] | None = None,
        clock_live: Path | None = None,
        clock_mount: str = "/chaos",
    ) -> None:
        self.cluster = cluster
        # set when the run may move clocks: the code under test then starts with libfaketime
        self._clock_live = clock_live
        self._clock_mount = clock_mount
        self.specs: dict[tuple[str, str], ProcessSpec] = {}
        self._held: set[tuple[str, str]] = set()
        self._restart_delay = restart_delay
        self._on_exit = on_exit or (lambda s: None)
        self._on_restart = on_restart or (lambda s, pid: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.restarts = 0

    def fakes_clock(self, spec: ProcessSpec) -> bool:
        """Whether ``spec``'s clock can be moved: the code under test's processes (never the
        infrastructure, Go binaries libfaketime cannot reach), and only in runs with clock faults."""
        return self._clock_live is not None and not spec.infrastructure

    def clock_file(self, node: str, name: str) -> Path | None:
        with self._lock:
            spec = self.specs.get((node, name))
        if spec is None or self._clock_live is None or not self.fakes_clock(spec):
            return None
        return clocks.clock_file(self._clock_live, node, name)

    def start_process(self, spec: ProcessSpec) -> int:
        if self._clock_live is not None and self.fakes_clock(spec):
            # the file exists (at the true time) before the process reads it; restarts keep the env
            clocks.make_clock_dir(self._clock_live)
            path = clocks.clock_file(self._clock_live, spec.node, spec.name)
            if not path.exists():
                clocks.write_offset(path, 0.0)
            argv = clocks.preload_argv(self._clock_mount, spec.node, spec.name, spec.argv)
            spec = dataclasses.replace(spec, argv=argv)
        with self._lock:
            self.specs[(spec.node, spec.name)] = spec
        return self.cluster.spawn(spec.node, spec.name, spec.argv, env=spec.env, user=spec.user)

    def start_processes(self, specs: Sequence[ProcessSpec]) -> None:
        """Start ``specs``: each node's in the order given, the nodes side by side. A start is a
        round trip to its node (and the wait for its pid file), so a bring-up pays for one node's
        starts, not for every node's one after another. Returns when all have started; raises the
        first failure (in ``specs``' order) once every node's starts are over."""
        by_node: dict[str, list[ProcessSpec]] = {}
        for spec in specs:
            by_node.setdefault(spec.node, []).append(spec)

        def node_starts(mine: list[ProcessSpec]) -> None:
            for spec in mine:
                self.start_process(spec)

        with ThreadPoolExecutor(max_workers=len(by_node) or 1) as pool:
            for f in [pool.submit(node_starts, mine) for mine in by_node.values()]:
                f.result()

    def processes(self, role: str | None = None) -> list[ProcessSpec]:
        with self._lock:
            return [s for s in self.specs.values() if role is None or s.role == role]

    def hold(self, node: str, name: str) -> None:
        with self._lock:
            self._held.add((node, name))

    def release(self, node: str, name: str, *, restart: bool = True) -> int | None:
        with self._lock:
            self._held.discard((node, name))
            spec = self.specs.get((node, name))
        if restart and spec is not None and self.cluster.pid(node, name) is None:
            pid = self.cluster.spawn(node, name, spec.argv, env=spec.env, user=spec.user)
            self._on_restart(spec, pid)
            return pid
        return None

    def watch(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="supervisor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        dead_since: dict[tuple[str, str], float] = {}
        while not self._stop.wait(0.1):
            with self._lock:
                items = [(k, s) for k, s in self.specs.items() if k not in self._held]
            for key, spec in items:
                if self.cluster.pid(spec.node, spec.name) is not None:
                    dead_since.pop(key, None)
                    continue
                if key not in dead_since:
                    dead_since[key] = time.monotonic()
                    self._on_exit(spec)
                    continue
                if time.monotonic() - dead_since[key] >= self._restart_delay:
                    with self._lock:
                        if key in self._held:
                            continue
                    try:
                        pid = self.cluster.spawn(
                            spec.node, spec.name, spec.argv, env=spec.env, user=spec.user
                        )
                    except Exception:
                        continue  # the node may be frozen or gone; try again next round
                    self.restarts += 1
                    dead_since.pop(key, None)
                    self._on_restart(spec, pid)
