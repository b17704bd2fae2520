"""Clock faults on the in-memory cluster: parsing, seeded draws, the ledger's record, heal, the
reaper's reset, and what the supervisor preloads. The real library is exercised in
tests/integration/test_clock_loss.py."""

from __future__ import annotations

import json
import os
import random
import stat
import time
import types
from pathlib import Path

import pytest

from chaos.cluster import clocks
from chaos.cluster.base import control_channel
from chaos.cluster.fake import FakeCluster
from chaos.core.context import RunContext
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec, Supervisor
from chaos.core.target import Target
from chaos.histories.jsonl import HistoryRecorder, read_history
from chaos.nemesis import clock
from chaos.nemesis.registry import moves_clocks, parse_nemesis


def make_ctx(tmp_path: Path, *, nemesis: tuple[str, ...] = ("clock",)) -> RunContext:
    cluster = FakeCluster()
    origin = time.monotonic()
    live = tmp_path / "live"
    history = HistoryRecorder(tmp_path / "history.jsonl", lambda: time.monotonic() - origin)
    sup = Supervisor(cluster, clock_live=live)
    ctx = RunContext(
        spec=TestSpec(workload="fake", seed=1, nemesis=nemesis),
        cluster=cluster,
        channel=control_channel(cluster),
        run_dir=tmp_path,
        live=live,
        origin=origin,
        history=history,
        events=EventTail(live, origin),
        supervisor=sup,
        faults=FaultLedger(history, tmp_path / "faults.json"),
        progress=lambda m: None,
    )
    for n in cluster.nodes:
        sup.start_process(
            ProcessSpec(node=n, name="etcd", argv=["etcd"], role="etcd", infrastructure=True)
        )
        sup.start_process(
            ProcessSpec(node=n, name="orders", argv=["python3", "-m", "svc"], role="orders")
        )
    return ctx


def test_clock_spec_parses_mode_amount_and_target() -> None:
    assert clock.parse("skew=4:orders@n2") == clock.ClockSpec(
        mode="skew", amount=4.0, target="orders@n2"
    )
    assert clock.parse("strobe") == clock.ClockSpec(mode="strobe", amount=None, target=None)
    assert clock.parse("orders") == clock.ClockSpec(mode=None, amount=None, target="orders")
    assert clock.parse(None).mode is None
    with pytest.raises(ValueError, match="drift rate"):
        clock.parse("drift=1")
    with pytest.raises(ValueError, match="unknown mode"):
        clock.parse("wobble=2")
    # the CLI's comma continues a node list after a clock mode too
    assert parse_nemesis(["clock:skew:n1", "n2"]) == [("clock", "skew:n1+n2")]


def test_only_the_code_under_test_is_preloaded_and_only_in_clock_runs(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    cluster = ctx.cluster
    assert isinstance(cluster, FakeCluster)
    svc = cluster.procs[("n1", "orders")].argv
    assert svc[0] == "env" and f"LD_PRELOAD={clocks.FAKETIME_LIB}" in svc
    assert "FAKETIME_DONT_FAKE_MONOTONIC=1" in svc and svc[-3:] == ["python3", "-m", "svc"]
    assert cluster.procs[("n1", "etcd")].argv == ["etcd"]
    # root's folder, root's files: the service user may read its clock, never set it
    d = clocks.clock_dir(ctx.live)
    assert stat.S_IMODE(d.stat().st_mode) == 0o755
    assert stat.S_IMODE((d / "n1-orders").stat().st_mode) == 0o644
    assert clocks.read_offset(d / "n1-orders") == 0.0
    assert moves_clocks(TestSpec(workload="lab1", nemesis=("clock:skew",)))
    assert moves_clocks(TestSpec(workload="lab1", triggers=("clock holder on lock-acquired",)))
    assert not moves_clocks(TestSpec(workload="lab1", nemesis=("pause", "partition:n1")))


def test_skew_draws_from_the_seed_moves_only_its_targets_and_heal_resets(
    tmp_path: Path,
) -> None:
    ctx = make_ctx(tmp_path)
    f = clock.ClockFault()
    a = f.resolve(ctx, "skew:all", random.Random(7))
    b = f.resolve(ctx, "skew:all", random.Random(7))
    assert a == b  # the seed replays the offsets
    assert {t.process for t in a.targets} == {"orders"}  # never etcd: Go reads time without libc
    offsets = a.params["offsets"]
    assert all(clock.MIN_OFFSET <= abs(v) <= clock.MAX_OFFSET for v in offsets.values())
    one = f.resolve(ctx, "bump=-2.5:orders@n2", random.Random(1))
    fid = f.start(ctx, one)
    files = {n: clocks.clock_file(ctx.live, n, "orders") for n in ctx.cluster.nodes}
    assert clocks.read_offset(files["n2"]) == -2.5
    assert clocks.read_offset(files["n1"]) == 0.0 and clocks.read_offset(files["n3"]) == 0.0
    mirror = json.loads((tmp_path / "faults.json").read_text())
    assert mirror[0]["reap"] == [{"op": "clock-reset", "files": [str(files["n2"])]}]
    ctx.faults.heal(fid)
    assert clocks.read_offset(files["n2"]) == 0.0
    ops = [op for op in read_history(tmp_path / "history.jsonl").records if op.f == "clock"]
    assert ops[-1].value["offset"] == -2.5 and ops[-1].value["node"] == "n2"


def test_strobe_flips_until_healed(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    f = clock.ClockFault()
    fid = f.start(ctx, f.resolve(ctx, "strobe=3:orders@n1", random.Random(1)))
    path = clocks.clock_file(ctx.live, "n1", "orders")
    # Watch the offset change four times (a flip every STEP, or later on a busy machine: the
    # mover is a thread), then heal.
    seen = [clocks.read_offset(path)]
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and len(seen) < 5:
        now = clocks.read_offset(path)
        if now != seen[-1]:
            seen.append(now)
        time.sleep(0.005)
    assert len(seen) == 5 and set(seen) == {0.0, 3.0}, seen
    ctx.faults.heal(fid)
    time.sleep(2 * clock.STEP)
    assert clocks.read_offset(path) == 0.0  # the mover stopped before the reset
    heal = [op for op in read_history(tmp_path / "history.jsonl").records if op.f == "heal-clock"][
        -1
    ]
    assert heal.value["flips"] >= 4


def test_reset_all_puts_every_clock_back_and_skips_links(tmp_path: Path) -> None:
    live = tmp_path / "live"
    d = clocks.make_clock_dir(live)
    clocks.write_offset(d / "n1-orders", 4.0)
    clocks.write_offset(d / "n2-orders", 0.0)
    os.symlink("/etc/hostname", d / "n3-orders")
    assert clocks.reset_all(live) == ["n1-orders"]
    assert clocks.read_offset(d / "n1-orders") == 0.0


def test_clock_target_without_a_faked_process_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    with pytest.raises(clock.ClockError, match="Go binaries"):
        clock.ClockFault().resolve(ctx, "skew:etcd", random.Random(1))
    assert (
        Target(node="n1", process="orders")
        in clock.ClockFault().resolve(ctx, "skew:orders@n1", random.Random(1)).targets
    )


def test_overlapping_clock_faults_add_up_and_each_heal_removes_only_its_own(
    tmp_path: Path,
) -> None:
    ctx = make_ctx(tmp_path)
    f = clock.ClockFault()
    path = clocks.clock_file(ctx.live, "n1", "orders")
    a = f.start(ctx, f.resolve(ctx, "skew=2:orders@n1", random.Random(1)))
    b = f.start(ctx, f.resolve(ctx, "bump=-0.5:orders@n1", random.Random(1)))
    assert clocks.read_offset(path) == 1.5
    ctx.faults.heal(a)
    assert clocks.read_offset(path) == -0.5  # the bump is still in force
    ctx.faults.heal(b)
    assert clocks.read_offset(path) == 0.0


def test_a_clock_fault_is_described_with_its_offsets() -> None:
    from chaos.checkers.faults import FaultInterval

    f = FaultInterval(
        fault_id=1, fault="clock", start=1.0, end=4.0,
        targets=[{"node": "n2", "process": "orders", "mode": "skew", "offset": 4.0},
                 {"node": "n3", "process": "orders", "mode": "drift", "rate": 1.5}],
    )  # fmt: skip
    assert f.describe() == (
        "n2's orders clock +4.000 s, n3's orders clock at 1.5x at 1.00 s for 3.0 s"
    )


def test_the_hosts_pair_keeps_the_read_no_preemption_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wall less monotonic, from the tightest bracketed read: a read whose two monotonic reads lie
    0.5 s apart (the process descheduled between them) would be off by up to 0.5 s."""
    # (monotonic before, wall, monotonic after) for each try: the first one split by a preemption
    reads = [(10.0, 1000.0, 10.5), (20.0, 1010.00001, 20.00002), (30.0, 1020.3, 30.2)]
    mono = iter(m for a, _, b in reads for m in (a, b))
    wall = iter(w for _, w, _ in reads)
    fake = types.SimpleNamespace(monotonic=lambda: next(mono), time=lambda: next(wall))
    monkeypatch.setattr(clocks, "time", fake)
    got = clocks.wall_minus_monotonic(tries=3)
    monkeypatch.undo()
    assert abs(got - 990.0) < 1e-6, got  # the second try's: 1010.00001 - 20.00001
    # and on this machine, two readings agree within a millisecond (a plain pair would not, under
    # load), and agree with a plain pair's reading up to its own preemption
    a, b = clocks.wall_minus_monotonic(), clocks.wall_minus_monotonic()
    assert abs(a - b) < 0.001, (a, b)
    assert abs(a - (time.time() - time.monotonic())) < 1.0
