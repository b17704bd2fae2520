"""Clock faults and lossy links on real containers, observed independently of the nemesis.

A *ticker* process of "the code under test" (run as nobody, preloaded like a lab service) prints
its wall clock and CLOCK_MONOTONIC every few milliseconds; the host's own (wall - monotonic) pair
is the true offset, since the monotonic clock is the kernel's and is not faked. So the test reads
the time *inside the target process*, not through the fault's own probe. A second ticker on
another node, and an infrastructure ticker (not preloaded) on the same node, must not move.

Lossy links are measured with the fault's UDP probe *and* with the test's own probe from
/proc-level tools (``ping``-free: datagrams counted by a receiver the test starts itself).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from chaos.cluster import clocks, net
from chaos.cluster.base import control_channel
from chaos.cluster.docker.backend import DockerBackend
from chaos.core.context import RunContext
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec, Supervisor
from chaos.histories.jsonl import HistoryRecorder
from chaos.nemesis.clock import ClockFault
from chaos.nemesis.loss import PacketLossFault
from tests.integration.conftest import chaos, chaos_bg, leftovers, wait_for_line
from tests.integration.nemesis_support import wait_until

pytestmark = pytest.mark.integration

# Event.wait, not time.sleep: see chaos.node.runtime (libfaketime breaks Python 3.11's sleep)
TICKER = (
    "import json, sys, threading, time\n"
    "e = threading.Event()\n"
    "while True:\n"
    "    m = time.monotonic(); w = time.time(); m2 = time.monotonic()\n"
    "    sys.stdout.write(json.dumps([m, w, m2]) + '\\n'); sys.stdout.flush()\n"
    "    e.wait(0.004)\n"
)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunContext]:
    tmp = tmp_path_factory.mktemp("clock")
    backend = DockerBackend()
    backend.prepare(lambda m: None)
    run_dir = tmp / "run"
    live = run_dir / "live"
    (live / "events").mkdir(parents=True)
    run_id = "t" + secrets.token_hex(4)
    origin = time.monotonic()
    history = HistoryRecorder(run_dir / "history.jsonl", lambda: time.monotonic() - origin)
    cluster = backend.make_cluster(run_id=run_id, nodes=3, live_dir=live, mounts={})
    with contextlib.ExitStack() as stack:
        stack.callback(cluster.teardown)
        stack.callback(history.close)
        cluster.start()
        sup = Supervisor(cluster, clock_live=live)
        stack.callback(sup.stop)
        ledger = FaultLedger(history, run_dir / "faults.json")
        stack.callback(ledger.shutdown)
        c = RunContext(
            spec=TestSpec(workload="none", seed=3, nemesis=("clock",)),
            cluster=cluster,
            channel=control_channel(cluster),
            run_dir=run_dir,
            live=live,
            origin=origin,
            history=history,
            events=EventTail(live, origin),
            supervisor=sup,
            faults=ledger,
            progress=lambda m: None,
        )
        for node in ("n1", "n2"):
            sup.start_process(
                ProcessSpec(node=node, name="ticker", role="ticker", user="nobody",
                            argv=["python3", "-c", TICKER])
            )  # fmt: skip
        sup.start_process(
            ProcessSpec(node="n1", name="infra", role="infra", infrastructure=True,
                        argv=["python3", "-c", TICKER])
        )  # fmt: skip
        yield c


def _offsets(ctx: RunContext, node: str, name: str, since: float) -> list[float]:
    """The offset of the wall clock the process read at each tick after monotonic ``since``."""
    base = clocks.wall_minus_monotonic()  # the host's true pair
    raw = ctx.cluster.get_file(node, f"/var/log/chaos/{name}.log") or b""
    out = []
    for line in raw.decode(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            m, w, m2 = json.loads(line)
            # a reading the process was descheduled in the middle of says nothing of its clock
            if m >= since and m2 - m < 0.001:
                out.append(w - (m + m2) / 2 - base)
    return out


def _settled(ctx: RunContext, node: str, name: str, since: float) -> list[float]:
    time.sleep(0.4)
    deadline = time.monotonic() + 20
    while len(got := _offsets(ctx, node, name, since)) <= 20 and time.monotonic() < deadline:
        time.sleep(0.2)  # a loaded machine: the ticker is given more time, not judged on less
    assert len(got) > 20, f"{name} on {node} ticked {len(got)} times"
    return got


def test_skew_and_bump_move_only_the_target_process_within_5_ms(ctx: RunContext) -> None:
    f = ClockFault()
    for spec, want in (("skew=2.5:ticker@n1", 2.5), ("bump=-1.25:ticker@n1", -1.25)):
        fid = f.start(ctx, f.resolve(ctx, spec, random.Random(1)))
        since = time.monotonic()
        moved = _settled(ctx, "n1", "ticker", since)
        err = max(abs(o - want) for o in moved)
        assert err < 0.005, f"{spec}: worst error {err * 1000:.2f} ms"
        for node, name in (("n2", "ticker"), ("n1", "infra")):
            assert max(abs(o) for o in _offsets(ctx, node, name, since)) < 0.005, (node, name)
        ctx.faults.heal(fid)
        back = _settled(ctx, "n1", "ticker", time.monotonic())
        assert max(abs(o) for o in back) < 0.005
        print(f"{spec}: {len(moved)} readings, worst error {err * 1000:.3f} ms")


def test_strobe_flips_and_drift_grows_then_both_return(ctx: RunContext) -> None:
    f = ClockFault()
    fid = f.start(ctx, f.resolve(ctx, "strobe=1:ticker@n1", random.Random(1)))
    since = time.monotonic()
    seen = _settled(ctx, "n1", "ticker", since)
    ctx.faults.heal(fid)
    ups = [o for o in seen if abs(o - 1.0) < 0.005]
    downs = [o for o in seen if abs(o) < 0.005]
    flips = sum(1 for a, b in itertools.pairwise(seen) if abs(a - b) > 0.5)
    assert ups and downs and flips >= 4, (len(ups), len(downs), flips)
    assert max(abs(o) for o in _settled(ctx, "n1", "ticker", time.monotonic())) < 0.005
    fid = f.start(ctx, f.resolve(ctx, "drift=2:ticker@n1", random.Random(1)))
    since = time.monotonic()
    drift = _settled(ctx, "n1", "ticker", since)
    ctx.faults.heal(fid)
    assert drift[-1] > drift[0] + 0.2, "a clock at twice the rate pulls ahead"
    assert max(abs(o) for o in _settled(ctx, "n1", "ticker", time.monotonic())) < 0.005
    print(f"strobe: {flips} flips in {len(seen)} readings; drift: {drift[0]:.3f}->{drift[-1]:.3f}")


def test_packet_loss_30_percent_is_measured_and_healed(ctx: RunContext) -> None:
    f = PacketLossFault()
    fid = f.start(ctx, f.resolve(ctx, "30%:n1+n2", random.Random(1)))
    # the test's own count, with more datagrams than the fault's probe
    own = [net.probe_loss(ctx.cluster, a, b, packets=1000) for a, b in (("n1", "n2"), ("n2", "n1"))]
    untouched = net.probe_loss(ctx.cluster, "n1", "n3", packets=400)
    ctx.faults.heal(fid)
    after = net.probe_loss(ctx.cluster, "n1", "n2", packets=400)
    for p in own:
        assert abs(p.loss - 0.30) <= 0.10, f"{p.src}->{p.dst} lost {p.loss:.1%}"
    assert untouched.loss <= 0.02 and after.loss <= 0.02
    assert net.rules(ctx.cluster, "n2") == []
    print("loss:", {f"{p.src}->{p.dst}": round(p.loss, 3) for p in own})
    # one node's every link, both ways: two of the fault's probes land in n3 at once
    fid = f.start(ctx, f.resolve(ctx, "20%:n3", random.Random(1)))
    ctx.faults.heal(fid)
    start = [o for o in ctx.history if o.extra.get("fault_id") == fid][1]
    assert set(start.value["measured"]) == {"n1->n3", "n2->n3", "n3->n1", "n3->n2"}


@pytest.mark.slow  # a whole lab1 run: keeps the non-slow tests of issue 14 under two minutes
@pytest.mark.exclusive
def test_sigkill_mid_clock_fault_then_cleanup_resets_the_clock(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    store = tmp_path / "store"
    proc = chaos_bg(
        "run", "lab1", "--nemesis", "clock:skew=3:orders@n1", "--seed", "5",
        "--time-limit", "120", "--fault-duration", "120", "--nemesis-interval", "0.5",
        "--tasks", "400", store=store,
    )  # fmt: skip
    hist = wait_until(lambda: next((store / "lab1").glob("2*/history.jsonl"), None), 60.0, 0.2)
    assert hist is not None
    done = wait_for_line(
        hist,
        lambda o: o.get("fault") == "clock" and isinstance(o.get("value"), dict)
        and "offset" in o["value"],
        90.0,
    )  # fmt: skip
    assert done is not None, "the clock fault never took effect"
    run = hist.parent
    clock_file = clocks.clock_file(run / "live", "n1", "orders")
    assert clocks.read_offset(clock_file) == 3.0
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    rid = json.loads((run / "spec.json").read_text())["run_id"]
    assert clocks.read_offset(clock_file) == 3.0, "a dead orchestrator leaves the clock moved"
    out = chaos("cleanup", store=None)
    assert "reset the clock of n1-orders" in out.stdout + out.stderr, out.stdout + out.stderr
    assert clocks.read_offset(clock_file) == 0.0
    assert leftovers(engine, rid) == []
