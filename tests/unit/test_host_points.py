"""Fault points the host fires (lab3's txn-error-*, by the nodes' etcd proxies): the nemesis arms
every node through the workload, waits for the host's own observation, disarms, and records where
it fired; a point the host never saw fire is recorded as not fired, whatever a service claims."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from chaos.core.capabilities import HostFaultPoints
from chaos.core.context import RunContext
from chaos.histories.jsonl import read_history
from chaos.nemesis.faultpoint import FaultPointNemesis
from chaos.nemesis.hostpoint import HostArming
from chaos.nemesis.registry import make_nemeses
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_nemesis_clock import make_ctx


class _Host:
    """Arms, fires after ``fire_after`` looks (never when None), and records every call."""

    host_points = {"txn-error-complete": ["/lab3/results/"]}

    def __init__(self, fire_after: int | None) -> None:
        self.fire_after = fire_after
        self.calls: list[str] = []
        self.looks = 0

    def arm_host_point(self, ctx: RunContext, point: str) -> str:
        self.calls.append(f"arm {point}")
        return "g1"

    def host_point_fired(self, ctx: RunContext, point: str, gen: str) -> list[dict[str, Any]]:
        self.looks += 1
        if self.fire_after is None or self.looks < self.fire_after:
            return []
        return [{"node": "n2", "time": 1.25, "keys": ["/lab3/results/t1"]}]

    def disarm_host_point(self, ctx: RunContext, point: str) -> None:
        self.calls.append(f"disarm {point}")


def _nemesis(host: _Host) -> FaultPointNemesis:
    arming = HostArming(host)  # type: ignore[arg-type]
    return FaultPointNemesis("txn-error-complete", component="worker", arming=arming, wait=5.0)


def _heal(tmp_path: Path) -> dict[str, Any]:
    ops = read_history(tmp_path / "history.jsonl").records
    heals = [o for o in ops if o.f == "heal-txn-error-complete" and isinstance(o.value, dict)]
    assert heals, [o.f for o in ops]
    return dict(heals[-1].value)


def test_lab3_has_its_txn_errors_fired_by_the_host() -> None:
    assert isinstance(Lab3(), HostFaultPoints)
    (n,) = make_nemeses(Lab3(), _spec("txn-error-complete"))
    assert isinstance(n, FaultPointNemesis) and isinstance(n.arming, HostArming)
    (m,) = make_nemeses(Lab3(), _spec("worker-crash-before-ack"))
    assert isinstance(m, FaultPointNemesis)
    assert not isinstance(m.arming, HostArming)  # the service's own point


def _spec(point: str) -> Any:
    from chaos.core.spec import TestSpec

    return TestSpec(workload="lab3", seed=1, nemesis=(point,))


def test_a_host_point_is_armed_confirmed_by_the_host_and_disarmed(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, nemesis=("txn-error-complete",))
    host = _Host(fire_after=3)
    n = _nemesis(host)
    n.run(ctx)
    assert n.armed.is_set()
    assert host.calls[0] == "arm txn-error-complete" and "disarm txn-error-complete" in host.calls
    heal = _heal(tmp_path)
    assert heal["node"] == "n2" and heal["fired_at"] == 1.25 and heal["fired_by"] == "host"
    assert heal["process"] == "worker" and heal["pid"] is None


def test_a_host_point_that_never_fired_is_recorded_so(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, nemesis=("txn-error-complete",))
    host = _Host(fire_after=None)
    stop = threading.Timer(0.5, ctx.stop.set)
    stop.start()
    _nemesis(host).run(ctx)
    stop.join()
    heal = _heal(tmp_path)
    assert heal.get("fired_at") is None and "node" not in heal
    assert host.calls[-1] == "disarm txn-error-complete"
