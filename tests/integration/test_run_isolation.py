"""Issue 31: two lab3 runs in a row on one grade worker, and nothing of the first is visible to
the second.

Both runs go through the grader's own task function (chaos.grade.task.run_one, a fork of the
worker's warm process, the submission as zip bytes), one after the other, in this process. The
first submission is the ``traces`` red team (tests/fixtures/redteam) set to leave: each of its
services plants files named with a mark wherever its user can write, a detached sleeper, etcd keys
inside and outside the lab's prefix and, through its broker user, a stream, a consumer, a bucket
and two messages. The second is the same set to find: it looks for them from inside.

What each run holds is read from chaos's side while it runs, never from the solution's reports
(which only say when the planting or looking is done): every file name in each node, walked by
the host through the node's root; every process on the host; every key in the run's etcd, read
from a member with chaos's client; every stream, consumer and message of the run's broker, read
as chaos's own broker user. The first run must show the traces its user could leave (else the
second's emptiness would prove nothing), the second none at all; and after each run no
container, network, volume, host chain, live mount or process of it is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from chaos.cluster.docker import firewall
from chaos.cluster.docker.resources import list_containers
from chaos.grade import warm
from chaos.grade.task import Finished, RunJob, pack_submission, run_one, unpack
from chaos.workloads.systems.etcd import CLIENT_PORT
from chaos.workloads.systems.nats import CONFIG, PORT
from chaos.workloads.systems.nats_auth import ADMIN
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
NODES = ("n1", "n2", "n3")
# a short load-mode run: its services live long enough (the workload's 12 s) for both the
# solution's planting or looking and chaos's reading beside it (8 s was short at load 39, and the
# suite runs two streams at once)
OPTIONS = ("--rate", "1", "--time-limit", "12", "--recovery-timeout", "5",
           "-o", "ack_wait=1", "-o", "work_seconds=0.2")  # fmt: skip
# run 1's user can write these (the node's tmpfs folders and message queues, the live folder's
# shared ones): chaos must see a trace in each on every node, or the test proves nothing
WRITABLE = ("/tmp", "/dev/shm", "/dev/mqueue", "/chaos/events", "/chaos/claims")


def _submission(root: Path, mode: str, token: str) -> tuple[Path, bytes]:
    """The ``traces`` red team as a student's folder, set to ``mode`` (leave, find)."""
    folder = root / "subs" / f"{mode}_traces"
    shutil.copytree(REDTEAM / "traces", folder)
    (folder / "token.txt").write_text(token + "\n")
    (folder / "mode.txt").write_text(mode + "\n")
    return folder, pack_submission(folder)


def _job(folder: Path, archive: bytes, seed: int) -> RunJob:
    return RunJob(student=folder.name, config="isolation", repeat=0, seed=seed, lab="lab3",
                  solution=str(folder), options=OPTIONS, submission=archive,
                  timeout=240)  # fmt: skip


# ---------------------------------------------------------------- what chaos reads of a run


def _files(pid: int, mark: str) -> list[str]:
    """Every name holding ``mark`` in the node whose init is host ``pid``, walked by the host
    through the node's root (its mounts as the node sees them; links are not followed)."""
    root = f"/proc/{pid}/root"
    found = []
    for top, dirs, names in os.walk(root, onerror=lambda _: None):
        if top == root:
            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
        found += [os.path.join(top, n).removeprefix(root) for n in [*dirs, *names] if mark in n]
    return found


def _processes(mark: str) -> list[str]:
    """Every process on the host whose command line holds ``mark``."""
    found = []
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = p.joinpath("cmdline").read_bytes() if p.name.isdigit() else b""
            if mark.encode() in argv:
                found.append(p.name + ": " + argv.replace(b"\0", b" ").decode(errors="replace"))
    return found


def _etcd(addr: str, mark: str) -> list[str]:
    """Every key of the run's etcd whose key or value holds ``mark`` (chaos's client, on a
    member)."""
    import etcd3

    c = etcd3.client(addr, CLIENT_PORT, timeout=10)
    try:
        return [
            m.key.decode(errors="replace")
            for value, m in c.get_all()
            if mark.encode() in m.key or mark.encode() in (value or b"")
        ]
    finally:
        c.close()


async def _broker(url: str, mark: str, tag: str) -> list[str]:
    """Every stream or consumer named with ``tag``, every message holding ``mark`` (chaos's own
    broker user)."""
    import nats

    found = []
    nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=2)
    try:
        js = nc.jetstream(timeout=5)
        for si in await js.streams_info():
            name = si.config.name
            if tag in name or mark in json.dumps(si.config.as_dict()):
                found.append(f"stream {name}")
            found += [f"consumer {name}/{ci.name}" for ci in await js.consumers_info(name)
                      if tag in ci.name]  # fmt: skip
            for seq in range(si.state.first_seq or 1, (si.state.last_seq or 0) + 1):
                with contextlib.suppress(Exception):  # deleted
                    m = await js.get_msg(name, seq)
                    if mark.encode() in (m.data or b"") or mark in (m.subject or ""):
                        found.append(f"message {name}#{seq} on {m.subject}")
    finally:
        await nc.close()
    return found


def _admin_url(pid: int, addr: str) -> str:
    """chaos's own broker user, from the broker's root-only configuration in its node."""
    text = Path(f"/proc/{pid}/root{CONFIG}").read_text()[:65536]
    users = json.loads(text.removeprefix("authorization "))["users"]
    password = next(u["password"] for u in users if u["user"] == ADMIN)
    return f"nats://{ADMIN}:{password}@{addr}:{PORT}"


def traces(nodes: dict[str, Any], token: str) -> dict[str, list[str]]:
    """What of the mark chaos itself sees in a running run (``nodes``: name -> container)."""
    mark = f"chaos-trace-{token}"
    pid = {n: int(c.attrs["State"]["Pid"]) for n, c in nodes.items()}
    addr = {n: next(iter(c.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]
            for n, c in nodes.items()}  # fmt: skip
    return {
        "files": [f"{n}:{f}" for n in sorted(nodes) for f in _files(pid[n], mark)],
        "processes": _processes(mark),
        "etcd": _etcd(addr["n1"], mark),
        "broker": asyncio.run(_broker(_admin_url(pid["n1"], addr["n1"]), mark, f"T{token}")),
    }


# ---------------------------------------------------------------- one run, read while it runs


def _ours(engine: docker.DockerClient, root: Path) -> dict[str, Any]:
    """This test's running nodes (their live folder is under ``root``), by node name."""
    found = {}
    for c in list_containers(engine, {"label": ["chaos.project=chaos"], "status": ["running"]}):
        labels = c.labels or {}
        if labels.get("chaos.live", "").startswith(str(root)) and labels.get("chaos.node"):
            found[labels["chaos.node"]] = c
    return found


def _reports(live: Path, role: str) -> dict[str, dict[str, Any]]:
    """The solution's probe events of ``role`` by node (its word: when it is done, no more)."""
    out = {}
    for f in live.glob("events/*-probe-*.jsonl"):
        for line in f.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                ev = json.loads(line)
                if ev.get("component") == role:
                    out[str(ev.get("node"))] = ev.get("data") or {}
    return out


def during(
    engine: docker.DockerClient, root: Path, job: RunJob, token: str
) -> tuple[Finished | BaseException, dict[str, list[str]], dict[str, Any]]:
    """Run ``job`` as a grade worker does, and once its api on every node has reported, read
    its traces from chaos's side. Returns the run's outcome, the traces and the reports."""
    got: list[Finished | BaseException] = []

    def go() -> None:
        try:
            got.append(run_one(job))
        except BaseException as e:
            got.append(e)

    t = threading.Thread(target=go, name=f"run-{job.student}")
    t.start()
    seen: dict[str, list[str]] = {}
    reports: dict[str, Any] = {}
    deadline = time.monotonic() + 150
    try:
        while t.is_alive() and time.monotonic() < deadline:
            nodes = _ours(engine, root)
            if len(nodes) == len(NODES):
                live = Path(nodes["n1"].labels["chaos.live"])
                reports = _reports(live, "api")
                if set(reports) == set(NODES):
                    seen = traces(nodes, token)
                    break
            time.sleep(0.3)
    finally:  # a reading that failed still lets the run end (and tear down) before the test does
        t.join(240)
    assert got and not t.is_alive(), f"{job.student}: the run did not end"
    assert seen, f"{job.student}: the run ended before every api reported ({reports})"
    return got[0], seen, reports


def run_id_of(outcome: Finished | BaseException, where: Path) -> str:
    assert isinstance(outcome, Finished), f"the run failed: {outcome!r}"
    unpack(outcome.archive, where)
    return str(json.loads((where / "spec.json").read_text())["run_id"])


def left_behind(engine: docker.DockerClient, run_id: str, root: Path, mark: str) -> list[str]:
    """Whatever of the run is still there: containers, networks and volumes by its label, its
    host chain or the chain's record, a live mount under ``root``, a process holding ``mark``, a
    child of the warm process (the run's fork)."""
    flt = {"label": [f"chaos.run={run_id}"]}
    out = [f"container {c.name}" for c in engine.containers.list(all=True, filters=flt)]
    out += [f"network {n.name}" for n in engine.networks.list(filters=flt)]
    out += [f"volume {v.name}" for v in engine.volumes.list(filters=flt)]
    chain = firewall.chain_for(run_id)
    out += [f"host chain {chain}"] * (chain in firewall.installed_chains())
    out += [f"chain record {chain}"] * (firewall.RECORDS / f"{chain}.json").exists()
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    out += [f"mount {m.split()[1]}" for m in mounts if m.split()[1].startswith(str(root))]
    out += [f"process {p}" for p in _processes(mark)]
    server = warm.server_pid()
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError):
            stat = p.joinpath("stat").read_text() if p.name.isdigit() else ""
            if stat and int(stat[stat.rindex(")") + 2 :].split()[1]) == server:
                out.append(f"child {p.name} of the warm process")
    return out


# ---------------------------------------------------------------- the test


def test_nothing_of_one_run_is_visible_to_the_next(
    tmp_path: Path, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(warm.ENV, raising=False)
    warm.start()  # the worker's warm process, before the runs' temporary folders move
    server = warm.server_pid()
    root = tmp_path / "worker"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))  # run_one's folders: the nodes' labels
    token = secrets.token_hex(4)
    mark = f"chaos-trace-{token}"

    first = _job(*_submission(tmp_path, "leave", token), seed=31)
    outcome, planted, said = during(engine, root, first, token)
    run1 = run_id_of(outcome, tmp_path / "run1")
    print("run 1, the solution's report:", json.dumps(said, indent=1))
    print("run 1, what chaos saw:", json.dumps(planted, indent=1))
    # the planting happened, as chaos reads it (else the second run's emptiness proves nothing)
    for node in NODES:
        for place in WRITABLE:
            assert any(f.startswith(f"{node}:{place}/{mark}") for f in planted["files"]), (
                f"{node}: no trace in {place}"
            )
    assert len(planted["processes"]) >= len(NODES), planted["processes"]
    assert {f"/lab3/{mark}/{n}" for n in NODES} <= set(planted["etcd"])
    assert not [k for k in planted["etcd"] if k.startswith(f"/{mark}")]  # refused by the proxy
    assert [b for b in planted["broker"] if b.startswith("message TASKS#")]
    assert not [b for b in planted["broker"] if not b.startswith("message TASKS#")]
    assert left_behind(engine, run1, root, mark) == []

    second = _job(*_submission(tmp_path, "find", token), seed=32)
    outcome, seen, looked = during(engine, root, second, token)
    run2 = run_id_of(outcome, tmp_path / "run2")
    print("run 2, the solution's report:", json.dumps(looked, indent=1))
    assert seen == {"files": [], "processes": [], "etcd": [], "broker": []}
    assert left_behind(engine, run2, root, mark) == []
    assert warm.server_pid() == server  # both runs were forks of the same warm process
