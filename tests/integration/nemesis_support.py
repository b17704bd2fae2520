"""A live lab3 deployment the nemesis tests can fault and observe on their own.

The fixture builds what ``run_test`` builds (real containers, etcd, JetStream, the lab3 services
under a supervisor, a fault ledger) but hands the context to the test, which applies faults through
the nemesis API and then looks at the system *independently*: /proc on the host, docker's own view,
etcd and NATS clients. A test must not take the nemesis's word for what happened.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chaos.cluster.base import control_channel
from chaos.cluster.docker.backend import DockerBackend
from chaos.core.context import RunContext
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import Supervisor
from chaos.histories.jsonl import HistoryRecorder
from chaos.nemesis import table
from chaos.orchestrator.run import copy_mounts, make_live
from chaos.workloads.lab3.workload import Lab3


@contextlib.contextmanager
def lab3_deployment(tmp: Path, *, seed: int = 1) -> Iterator[RunContext]:
    backend = DockerBackend()
    spec = TestSpec(workload="lab3", seed=seed, options={"ack_wait": 1.0})
    run_dir = tmp / "run"
    live = run_dir / "live"
    make_live(live, 3)  # the layout the orchestrator makes: services run as nobody
    run_id = "t" + secrets.token_hex(4)
    origin = time.monotonic()
    history = HistoryRecorder(run_dir / "history.jsonl", lambda: time.monotonic() - origin)
    wl = Lab3()
    mounts = copy_mounts(wl.mounts(spec), run_dir / "mounts")
    cluster = backend.make_cluster(run_id=run_id, nodes=3, live_dir=live, mounts=mounts)
    with contextlib.ExitStack() as stack:
        stack.callback(cluster.teardown)
        stack.callback(history.close)
        cluster.start()
        supervisor = Supervisor(cluster)
        stack.callback(supervisor.stop)
        ledger = FaultLedger(history, live / "faults.json", kinds=table.recorded())
        stack.callback(ledger.shutdown)
        ctx = RunContext(
            spec=spec,
            cluster=cluster,
            channel=control_channel(cluster),
            run_dir=run_dir,
            live=live,
            origin=origin,
            history=history,
            events=EventTail(live, origin),
            supervisor=supervisor,
            faults=ledger,
            progress=lambda m: None,
        )
        stack.callback(ctx.stop.set)
        wl.deploy(ctx)
        supervisor.watch()
        ctx.state["workload"] = wl
        yield ctx


def proc_state(host_pid: int) -> str | None:
    """A process's state letter straight from /proc (R, S, D, T, Z), None when gone."""
    try:
        stat = Path(f"/proc/{host_pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2]


def pids_in_container(init_pid: int) -> list[int]:
    ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{e}/ns/pid") == ns:
                    out.append(int(e))
    return out


def wait_until(pred: Any, timeout: float, step: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(step)
