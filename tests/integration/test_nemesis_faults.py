"""Each fault's effect on the real system, and its heal, observed independently of the nemesis.

One lab3 deployment (3 containers: etcd on each, JetStream on n1, api/relay/worker on each) serves
every test of this module; each test heals what it did, and checks so.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from chaos.cluster import net
from chaos.core.context import RunContext
from chaos.core.target import Target
from chaos.nemesis.freeze import FreezeFault
from chaos.nemesis.grudge import components
from chaos.nemesis.kill import KillFault
from chaos.nemesis.partition import PartitionFault
from chaos.nemesis.pause import PauseFault
from chaos.nemesis.targets import resolve_targets
from chaos.workloads.systems import etcd, nats
from tests.integration.nemesis_support import (
    lab3_deployment,
    pids_in_container,
    proc_state,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunContext]:
    with lab3_deployment(tmp_path_factory.mktemp("nemesis-faults")) as c:
        yield c


def _wl(ctx: RunContext) -> Any:
    return ctx.state["workload"]


def _host_pid(ctx: RunContext, node: str, name: str) -> int:
    hp = ctx.cluster.host_pid(node, name)  # type: ignore[attr-defined]
    assert hp is not None, f"{name} on {node} is not running"
    return int(hp)


def _init_pid(engine: docker.DockerClient, ctx: RunContext, node: str) -> int:
    c = engine.containers.get(ctx.cluster.container_name(node))  # type: ignore[attr-defined]
    return int(c.attrs["State"]["Pid"])


def _nemesis_ops(ctx: RunContext, fid: int) -> list[Any]:
    return [o for o in ctx.history.ops if o.extra.get("fault_id") == fid]


def test_pause_stops_one_process_and_the_heal_resumes_it(ctx: RunContext) -> None:
    fault = PauseFault(_wl(ctx))
    resolved = fault.resolve(ctx, "worker@n2", random.Random(0))
    assert resolved.targets == (Target(node="n2", process="worker"),)
    worker, relay = _host_pid(ctx, "n2", "worker"), _host_pid(ctx, "n2", "relay")
    fid = fault.start(ctx, resolved)
    try:
        assert proc_state(worker) == "T"
        assert proc_state(relay) in ("S", "R"), "only the target process is stopped"
        # written down before the signal, so a killed orchestrator's leftovers can be resumed
        faults = json.loads((ctx.live / "faults.json").read_text())
        tokens = [r.get("token", "") for f in faults for r in f["reap"]]
        assert any(t.startswith(f"{worker}:") for t in tokens), faults
    finally:
        ctx.faults.heal(fid)
    assert wait_until(lambda: proc_state(worker) in ("S", "R"), 10.0), proc_state(worker)
    _, done, _, healed = _nemesis_ops(ctx, fid)
    assert done.value["pid"] == ctx.cluster.pid("n2", "worker") and done.value["state"] == "T"
    assert healed.value["signal"] == "SIGCONT" and healed.value["state"] != "T"


def test_freeze_stops_every_process_of_the_container(
    ctx: RunContext, engine: docker.DockerClient
) -> None:
    fault = FreezeFault(_wl(ctx))
    resolved = fault.resolve(ctx, "n3", random.Random(0))
    init = _init_pid(engine, ctx, "n3")
    pids = pids_in_container(init)
    assert len(pids) >= 5, pids  # init, etcd, api, relay, worker at least
    fid = fault.start(ctx, resolved)
    try:
        container = engine.containers.get(ctx.cluster.container_name("n3"))  # type: ignore[attr-defined]
        assert container.status == "paused"
        for p in pids:
            cg = Path(f"/proc/{p}/cgroup").read_text()
            path = next(ln.split(":", 2)[2] for ln in cg.splitlines() if ":freezer:" in ln)
            assert (
                Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text().strip() == "FROZEN"
            )
            assert proc_state(p) == "D", f"pid {p} is {proc_state(p)} in a frozen cgroup (v1)"
        # the frozen member answers nobody
        c = etcd.member_client(ctx, "n3", timeout=1.0)
        try:
            with pytest.raises(Exception):  # noqa: B017 - any failure to answer is the point
                c.get("/chaos/test/frozen")
        finally:
            c.close()
    finally:
        ctx.faults.heal(fid)
    container.reload()
    assert container.status == "running"
    # thawed: every process runs or sleeps again (looked at until so, since one that wakes into
    # I/O shows D for a moment)
    assert wait_until(
        lambda: all(proc_state(p) in ("S", "R") for p in pids_in_container(init)), 10.0
    ), {p: proc_state(p) for p in pids_in_container(init)}
    c = etcd.member_client(ctx, "n3", timeout=3.0)
    try:
        assert wait_until(lambda: _answers(c), 30.0)
    finally:
        c.close()


def test_a_pause_inside_a_freeze_is_pending_until_the_thaw(ctx: RunContext) -> None:
    # the kernel's own record: the SIGSTOP waits in the frozen process (ShdPnd, bit 19) and
    # stops it at the thaw; the pause's heal resumes it
    freeze, pause = FreezeFault(_wl(ctx)), PauseFault(_wl(ctx))
    worker = _host_pid(ctx, "n3", "worker")
    frozen = freeze.start(ctx, freeze.resolve(ctx, "n3", random.Random(0)))
    paused = None
    try:
        paused = pause.start(ctx, pause.resolve(ctx, "worker@n3", random.Random(0)))
        try:
            status = Path(f"/proc/{worker}/status").read_text()
            pending = int(next(ln.split()[1] for ln in status.splitlines()
                               if ln.startswith("ShdPnd:")), 16)  # fmt: skip
            assert pending & (1 << (signal.SIGSTOP - 1)), status
            assert proc_state(worker) == "D"
        finally:
            ctx.faults.heal(frozen)
        assert wait_until(lambda: proc_state(worker) == "T", 10.0), proc_state(worker)
    finally:
        if paused is not None:
            ctx.faults.heal(paused)
        ctx.faults.heal(frozen)
    assert wait_until(lambda: proc_state(worker) in ("S", "R"), 10.0), proc_state(worker)
    assert paused is not None
    _, done, _, healed = _nemesis_ops(ctx, paused)
    assert done.value["state"] == "frozen" and done.value["pending"] is True
    assert healed.value["signal"] == "SIGCONT"


def _answers(c: Any) -> bool:
    try:
        c.get("/chaos/test/any")
        return True
    except Exception:
        return False


async def _stream(url: str, publish: int) -> int:
    import nats as nats_py
    from nats.js.api import StorageType, StreamConfig

    nc = await nats_py.connect(url, connect_timeout=2, max_reconnect_attempts=5)
    try:
        js = nc.jetstream()
        if publish:
            await js.add_stream(
                StreamConfig(
                    name="NEMESISTEST", subjects=["nemesistest.>"], storage=StorageType.FILE
                )
            )
            for i in range(publish):
                await js.publish(f"nemesistest.{i}", b"x")
        return int((await js.stream_info("NEMESISTEST")).state.messages)
    finally:
        await nc.close()


def test_killed_broker_restarts_with_its_stream_intact(ctx: RunContext) -> None:
    url = nats.url(ctx)
    before = asyncio.run(_stream(url, publish=7))
    assert before == 7
    fault = KillFault(_wl(ctx))
    resolved = fault.resolve(ctx, "broker", random.Random(0))
    assert resolved.targets == (Target(node="n1", process="nats"),)
    old = _host_pid(ctx, "n1", "nats")
    fid = fault.start(ctx, resolved)
    try:
        assert proc_state(old) in (None, "Z")
        with (
            pytest.raises(ConnectionRefusedError),
            socket.create_connection((ctx.cluster.address("n1"), nats.PORT), timeout=1.0),
        ):
            pass
        assert ctx.cluster.pid("n1", "nats") is None, "the supervisor must not restart it early"
    finally:
        ctx.faults.heal(fid)
    new = _host_pid(ctx, "n1", "nats")
    assert new != old
    after = wait_until(lambda: _count_or_none(url), 10.0)
    assert after == before, f"stream had {before} messages before the kill, {after} after"


def _count_or_none(url: str) -> int | None:
    try:
        return asyncio.run(_stream(url, publish=0))
    except Exception:
        return None


def test_leader_role_resolves_to_the_etcd_leader(ctx: RunContext) -> None:
    got = resolve_targets(ctx, _wl(ctx), "leader", random.Random(0))
    assert got == [Target(node=etcd.leader(ctx) or "?", process="etcd")]
    workers = resolve_targets(ctx, _wl(ctx), "worker@all", random.Random(0))
    assert [t.node for t in workers] == ["n1", "n2", "n3"]


def _linearizable_get(ctx: RunContext, node: str, key: str, timeout: float = 1.5) -> Any:
    c = etcd.member_client(ctx, node, timeout=timeout)
    try:
        value, _ = c.get(key)  # etcd3's get is linearizable (a ReadIndex through the leader)
        return value
    finally:
        c.close()


def test_partition_one_isolates_a_member_until_healed(ctx: RunContext) -> None:
    fault = PartitionFault(_wl(ctx))
    resolved = fault.resolve(ctx, "one", random.Random(3))
    comps = components(ctx.cluster.nodes, resolved.grudge)
    (isolated,) = next(c for c in comps if len(c) == 1)
    majority = [n for n in ctx.cluster.nodes if n != isolated]
    key = f"/chaos/test/partition/{random.random()}"
    fid = fault.start(ctx, resolved)
    try:
        # the rules are where they should be: in the isolated node's own namespace
        init = ctx.cluster._init_pid[isolated]  # type: ignore[attr-defined]
        rules = subprocess.run(
            ["nsenter", "-t", str(init), "-n", "iptables", "-S", net.chain_name(ctx.cluster.run_id)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert rules.count("-j DROP") == len(majority), rules

        # the majority elects (if it must) and serves linearizable writes and reads
        def majority_ok() -> bool:
            try:
                c = etcd.member_client(ctx, majority[0], timeout=1.5)
                try:
                    c.put(key, "v1")
                finally:
                    c.close()
                return _linearizable_get(ctx, majority[1], key) == b"v1"
            except Exception:
                return False

        assert wait_until(majority_ok, 10.0), "the majority must keep serving"
        with pytest.raises(Exception):  # noqa: B017 - no quorum: the read must not be served
            _linearizable_get(ctx, isolated, key)
    finally:
        ctx.faults.heal(fid)
    assert net.rules(ctx.cluster, isolated) == []  # type: ignore[arg-type]

    def agree() -> bool:
        try:
            return all(_linearizable_get(ctx, n, key, 2.0) == b"v1" for n in ctx.cluster.nodes)
        except Exception:
            return False

    assert wait_until(agree, 15.0), "after the heal every member serves the same value"
    _, done, _, healed = _nemesis_ops(ctx, fid)
    assert done.value["grudge"] == resolved.grudge
    assert all(v == "timeout" for k, v in done.value["verified"].items() if isolated in k)
    assert all(v in ("open", "refused") for v in healed.value["verified"].values())
