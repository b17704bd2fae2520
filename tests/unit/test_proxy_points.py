"""Write and read points decided by the nodes' etcd proxies (chaos.node.proxy_points,
chaos.nemesis.writepoint): armed through a root-only file, fired once per arming and once in the
cluster, the sender found by the host, the fault applied while the call is held."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chaos.cluster.docker import procfs
from chaos.core.context import RunContext
from chaos.core.target import Resolved, Target
from chaos.histories.jsonl import read_history
from chaos.nemesis.hold import HoldFault
from chaos.nemesis.kill import KillFault
from chaos.nemesis.pause import PauseFault
from chaos.nemesis.trigger import TriggerError, bind, parse_trigger
from chaos.nemesis.writepoint import WriteTriggerNemesis
from chaos.node.deliveries import MAX_OPEN, Gate, InFlight, as_spec
from chaos.node.proxy_points import ARM_FILE, Held, WritePoints, peer_port
from chaos.workloads.lab1.workload import Lab1
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_fault_confirmation import _ctx

PEER = "ipv4:127.0.0.1:40123"


def _arm(control: Path, **spec: Any) -> None:
    control.mkdir(parents=True, exist_ok=True)
    (control / ARM_FILE).write_text(json.dumps(spec))


def test_a_write_under_the_armed_keys_fires_once_and_notes_the_senders_port(
    tmp_path: Path,
) -> None:
    control = tmp_path / "control"
    points = WritePoints(control, "n2")
    assert points.take("write", "after", ["/lab3/counter"], PEER) is None  # nothing armed
    _arm(control, gen="g1", op="write", moment="after", keys=["/lab3/counter"])
    assert points.take("write", "before", ["/lab3/counter"], PEER) is None  # another moment
    assert points.take("read", "after", ["/lab3/counter"], PEER) is None  # a read
    assert points.take("write", "after", ["/lab3/results/t1"], PEER) is None  # other keys
    held = points.take("write", "after", ["/lab3/results/t1", "/lab3/counter"], PEER)
    assert held is not None and held.gen == "g1"
    note = json.loads((control / "fired-g1").read_text())
    assert (note["node"], note["port"], note["keys"], note["op"]) == (
        "n2", 40123, ["/lab3/counter"], "write",
    )  # fmt: skip
    # one arming, one firing: a later call of the point is held beside it, not fired again
    assert points.take("write", "after", ["/lab3/counter"], PEER) == Held("g1", first=False)
    (control / "release-g1").write_text('{"forward": true}')
    assert points.wait(held) == {"forward": True}
    assert points.take("write", "after", ["/lab3/counter"], PEER) is None


def test_a_decoy_call_first_does_not_let_the_real_one_through(tmp_path: Path) -> None:
    """A thread of the code under test reads the counter first (a decoy): it takes the firing,
    and the real read that follows is held with it until the release, then neither is."""
    control = tmp_path / "control"
    points = WritePoints(control, "n2")
    _arm(control, gen="g3", op="read", moment="before", keys=["/lab3/counter"])
    decoy = points.take("read", "before", ["/lab3/counter"], PEER)
    assert decoy == Held("g3")
    real = points.take("read", "before", ["/lab3/counter"], "ipv4:127.0.0.1:40999")
    assert real == Held("g3", first=False)
    # other points, other keys: not held
    assert points.take("write", "before", ["/lab3/counter"], PEER) is None
    assert points.take("read", "before", ["/lab3/dedup/e1"], PEER) is None
    # the later call's own deadline ends its wait, not the firing's hold
    assert points.wait(real, limit=0.01) == {"forward": True, "timed_out": True}
    assert points.take("read", "before", ["/lab3/counter"], PEER) == Held("g3", first=False)
    (control / "release-g3").write_text('{"forward": false}')
    assert points.wait(decoy) == {"forward": False}
    assert points.take("read", "before", ["/lab3/counter"], PEER) is None


def _deliveries(path: Path, *entries: tuple[str, float]) -> None:
    body = {"deliveries": [{"subject": s, "mono": t} for s, t in entries]}
    path.write_text(json.dumps(body))


ACKS = "$JS.ACK.TASKS.workers."


def test_a_gated_read_fires_only_while_the_node_has_a_delivery_in_flight(tmp_path: Path) -> None:
    """lab3's read point (``during``): a read between deliveries — a thread of the code under test
    reading the counter every 20 ms — does not take the one firing; a read while a delivery of the
    consumer is in flight fires, and its note names that delivery (chaos.node.deliveries)."""
    control, file = tmp_path / "control", tmp_path / "deliveries.json"
    points = WritePoints(control, "n2")
    during = as_spec(str(file), [ACKS], 1.0)
    _arm(control, gen="g4", op="read", moment="before", keys=["/lab3/counter"], during=during)
    counter = ["/lab3/counter"]
    assert points.take("read", "before", counter, PEER) is None  # no record yet: shut
    _deliveries(file)
    assert points.take("read", "before", counter, PEER) is None  # none in flight
    now = time.monotonic()
    _deliveries(file, ("$JS.ACK.OTHER.c.1.1.1.0.0", now))
    assert points.take("read", "before", counter, PEER) is None  # another consumer's
    _deliveries(file, (ACKS + "1.1.1.0.0", now - 1.5))
    assert points.take("read", "before", counter, PEER) is None  # past AckWait: not held open
    assert not (control / "fired-g4").exists()
    _deliveries(file, (ACKS + "1.1.1.0.0", now - 1.5), (ACKS + "1.2.2.0.0", now))
    held = points.take("read", "before", counter, PEER)
    assert held == Held("g4")
    note = json.loads((control / "fired-g4").read_text())
    assert note["delivery"] == ACKS + "1.2.2.0.0"
    # the real read that follows is held with it, whatever is in flight by then
    _deliveries(file)
    assert points.take("read", "before", counter, PEER) == Held("g4", first=False)


def test_a_gate_it_cannot_read_never_fires_ungated(tmp_path: Path) -> None:
    control, file = tmp_path / "control", tmp_path / "deliveries.json"
    points = WritePoints(control, "n2")
    _deliveries(file, (ACKS + "1.1.1.0.0", time.monotonic()))
    for bad in ({"file": "relative", "acks": [ACKS]}, {"file": str(file), "acks": []}, [1]):
        _arm(control, gen="g5", op="read", moment="before", keys=["/lab3/counter"], during=bad)
        assert points.take("read", "before", ["/lab3/counter"], PEER) is None, bad
    file.write_text("{not json")
    _arm(control, gen="g5", op="read", moment="before", keys=["/lab3/counter"],
         during=as_spec(str(file), [ACKS], None))  # fmt: skip
    assert points.take("read", "before", ["/lab3/counter"], PEER) is None


def test_the_in_flight_record_follows_deliveries_and_their_connections(tmp_path: Path) -> None:
    """The NATS proxy's side (chaos.node.deliveries.InFlight), on a fake clock; the same record
    against a real broker: tests/unit/test_nats_proxy.py."""
    clock = [100.0]
    file = tmp_path / "deliveries.json"
    record = InFlight(file, clock=lambda: clock[0])
    gate = Gate(file, (ACKS,), within=1.0)
    assert gate.delivery(now=100.0) is None
    record.delivered(ACKS + "a", 40001)
    clock[0] = 100.5
    record.delivered(ACKS + "b", 40002)
    assert gate.delivery(now=100.6) == ACKS + "b"  # the newest
    record.ended(ACKS + "b")
    assert gate.delivery(now=100.6) == ACKS + "a"
    assert gate.delivery(now=101.0) is None  # a's AckWait is over
    assert Gate(file, (ACKS,)).delivery(now=500.0) == ACKS + "a"  # no window: until it ends
    record.closed(40001)
    assert Gate(file, (ACKS,)).delivery(now=500.0) is None
    for i in range(MAX_OPEN + 5):  # a client that never ends any: bounded, the newest kept
        record.delivered(ACKS + str(i), 40003)
    kept = json.loads(file.read_text())["deliveries"]
    assert len(kept) == MAX_OPEN and kept[-1]["subject"] == ACKS + str(MAX_OPEN + 4)


def test_lab3_gates_its_read_points_on_deliveries_and_lab1_does_not(tmp_path: Path) -> None:
    """The workload declares it: lab3's reads wait for a delivery in flight (AckWait long), its
    writes do not; lab1's read point (acquire-race's ``read of lock``) fires as before."""
    armed: list[dict[str, Any]] = []

    class Cluster:
        nodes = ["n1"]

        def put_file(self, node: str, path: str, data: bytes) -> None:
            armed.append(json.loads(data))

    for workload, op, group in ((Lab3(), "read", "counter"), (Lab3(), "write", "counter"),
                                (Lab1(), "read", "lock")):  # fmt: skip
        spec = SimpleNamespace(workload=workload.name, options={"ack_wait": "3"})
        ctx = SimpleNamespace(cluster=Cluster(), spec=spec)
        workload.arm_write_point(ctx, op, "before", group)  # type: ignore[arg-type]
    lab3_read, lab3_write, lab1_read = armed
    assert lab3_read["during"] == {"file": "/var/log/chaos/nats-proxy/deliveries.json",
                                   "acks": ["$JS.ACK.TASKS.workers."], "within": 3.0}  # fmt: skip
    assert "during" not in lab3_write and "during" not in lab1_read


def test_a_write_that_changes_nothing_does_not_fire_the_point(tmp_path: Path) -> None:
    control = tmp_path / "control"
    points = WritePoints(control, "n2")
    _arm(control, gen="g4", op="write", moment="before", keys=["/lab3/counter"])
    asked: list[list[str]] = []

    def same(prefixes: Any) -> bool:
        asked.append(list(prefixes))
        return False

    assert points.take("write", "before", ["/lab3/counter"], PEER, same) is None
    assert asked == [["/lab3/counter"]] and not (control / "fired-g4").exists()
    # the arming waits for a write that changes the group
    assert points.take("write", "before", ["/lab3/counter"], PEER, lambda ps: True) == Held("g4")
    # reads change nothing by nature: the test is for writes only
    _arm(control, gen="g5", op="read", moment="before", keys=["/lab3/dedup/"])
    assert points.take("read", "before", ["/lab3/dedup/e"], PEER, same) == Held("g5")


def test_an_arming_for_the_cluster_fires_on_one_proxy_only(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    proxies = [WritePoints(tmp_path / n / "control", n, claims) for n in ("n1", "n2", "n3")]
    for n in ("n1", "n2", "n3"):
        _arm(tmp_path / n / "control", gen="g2", op="read", moment="before", keys=["/lab3/dedup/"])
    fired = [p.take("read", "before", ["/lab3/dedup/e1"], PEER) for p in proxies]
    assert [f is not None for f in fired] == [True, False, False]
    assert json.loads((claims / "write-g2").read_text())["node"] == "n1"


def test_a_held_call_waits_for_its_release_and_never_forever(tmp_path: Path) -> None:
    control = tmp_path / "control"
    _arm(control, gen="g3", op="write", moment="before", keys=["/lab3/"])
    points = WritePoints(control, "n1")
    held = points.take("write", "before", ["/lab3/counter"], PEER)
    assert held is not None
    threading.Timer(0.2, lambda: (control / "release-g3").write_text('{"forward": false}')).start()
    started = time.monotonic()
    assert points.wait(held, limit=5) == {"forward": False}
    assert time.monotonic() - started >= 0.15
    other = WritePoints(control, "n1")
    _arm(control, gen="g4", op="write", moment="before", keys=["/lab3/"])
    held = other.take("write", "before", ["/lab3/counter"], PEER)
    assert held is not None
    assert other.wait(held, limit=0.1) == {"forward": True, "timed_out": True}
    # a release file caught before its words (created, not yet written) is no release: a kill's
    # held write must not go on because the proxy read {} (a missing "forward")
    _arm(control, gen="g5", op="write", moment="before", keys=["/lab3/"])
    held = other.take("write", "before", ["/lab3/counter"], PEER)
    assert held is not None
    (control / "release-g5").write_text("")
    assert other.wait(held, limit=0.1) == {"forward": True, "timed_out": True}


@pytest.mark.parametrize("gen", ["", "../x", ".hidden"])
def test_an_arming_with_a_bad_generation_is_ignored(tmp_path: Path, gen: str) -> None:
    control = tmp_path / "control"
    _arm(control, gen=gen, op="write", moment="after", keys=["/lab3/"])
    assert WritePoints(control, "n1").take("write", "after", ["/lab3/counter"], PEER) is None


def test_peer_port() -> None:
    assert peer_port("ipv4:127.0.0.1:5") == 5
    assert peer_port("ipv6:[::1]:6") == 6
    assert peer_port("unix:/tmp/s") is None


def test_the_host_finds_the_process_that_holds_a_loopback_connection() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    try:
        local, remote = client.getsockname()[1], server.getsockname()[1]
        inode = procfs.tcp_inode(os.getpid(), local, remote)
        assert inode is not None
        assert procfs.holds_socket(os.getpid(), inode)
        assert os.getpid() in procfs.descendants(os.getpid())
        assert procfs.tcp_inode(os.getpid(), remote, local) != inode  # the other end
        assert procfs.tcp_inode(os.getpid(), local, remote + 1 if remote < 65535 else 1) is None
    finally:
        client.close()
        server.close()


def test_write_and_read_phrases_bind_to_the_labs_groups() -> None:
    tr = bind(parse_trigger("kill worker after write of counter"), Lab3(), "lab3")
    assert (tr.write, tr.op, tr.point and tr.point.component) == ("counter", "write", "worker")
    assert tr.to_json()["decided_by"] == "etcd-proxy"
    tr = bind(parse_trigger("pause worker before read of counter for 2s"), Lab3(), "lab3")
    assert (tr.op, tr.duration) == ("read", 2.0)
    tr = bind(parse_trigger("pause holder before write of orders for 2s"), Lab1(), "lab1")
    assert tr.point is not None and tr.point.component == "orders"
    with pytest.raises(TriggerError, match=r"no write group 'countr'.*did you mean 'counter'"):
        bind(parse_trigger("kill worker after write of countr"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="'for', not 'until'"):
        bind(parse_trigger("pause worker before write of counter until commit"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="no role 'nats'"):
        bind(parse_trigger("kill nats after write of counter"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="a hold is the etcd proxy's"):
        bind(parse_trigger("hold worker on delivery"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="'before write' or 'after write'"):
        bind(parse_trigger("kill worker on write of counter"), Lab3(), "lab3")


class FakeWrites:
    """The proxies of the in-memory cluster: each arming fires at once, on n2, sent by the next
    writer of ``writers``."""

    write_groups = {"counter": ("/lab3/counter",)}

    def __init__(self, writers: list[str]) -> None:
        self.writers = writers
        self.armed: list[tuple[str, str, str]] = []
        self.holds: list[float | None] = []
        self.thens: list[int] = []
        self.released: list[tuple[str, str, bool]] = []
        self.disarmed = 0
        self.reads = 0
        self.ops: list[str] = []  # the op each call named: which proxy it went to

    def arm_write_point(
        self,
        ctx: RunContext,
        op: str,
        moment: str,
        group: str,
        hold: float | None = None,
        then: int = 0,
    ) -> str:
        self.armed.append((op, moment, group))
        self.holds.append(hold)
        self.thens.append(then)
        return f"g{len(self.armed)}"

    def write_point_fired(self, ctx: RunContext, gen: str) -> dict[str, Any] | None:
        return {
            "node": "n2",
            "time": 1.0,
            "port": 40000 + len(self.armed),
            "keys": ["/lab3/counter"],
        }

    def write_point_writer(
        self, ctx: RunContext, node: str, port: int, op: str = "write"
    ) -> str | None:
        self.ops.append(op)
        return self.writers.pop(0)

    def release_write_point(
        self, ctx: RunContext, node: str, gen: str, *, forward: bool, op: str = "write"
    ) -> None:
        self.ops.append(op)
        self.released.append((node, gen, forward))

    def disarm_write_point(self, ctx: RunContext, op: str = "write") -> None:
        self.ops.append(op)
        self.disarmed += 1

    def group_state(self, ctx: RunContext, group: str) -> frozenset[str] | None:
        self.reads += 1
        return frozenset({"a"} if self.reads < 3 else {"b"})  # a new value at the third look


def _nemesis(phrase: str, fault: Any, writes: FakeWrites) -> WriteTriggerNemesis:
    tr = bind(parse_trigger(phrase), Lab3(), "lab3")
    return WriteTriggerNemesis(tr, fault, writes=writes, default_duration=0.05, wait=5)


def test_a_kill_at_a_held_write_lands_on_the_sender_the_host_found_and_drops_the_write(
    tmp_path: Path,
) -> None:
    ctx, _ = _ctx(tmp_path)
    # the first held write was another component's: let go, armed again
    writes = FakeWrites(["api", "worker"])
    _nemesis("kill worker before write of counter", KillFault(), writes).run(ctx)
    assert writes.armed == [("write", "before", "counter")] * 2
    assert writes.released == [("n2", "g1", True), ("n2", "g2", False)]
    ops = read_history(ctx.run_dir / "history.jsonl").records
    fired = [o for o in ops if isinstance(o.extra.get("trigger"), dict)]
    assert fired, ops
    trigger = fired[0].extra["trigger"]
    assert (trigger["decided_by"], trigger["node"], trigger["component"]) == (
        "etcd-proxy", "n2", "worker",
    )  # fmt: skip


def test_a_pause_at_a_held_write_lets_it_go_after_the_fault(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    _nemesis("pause worker before write of counter for 0.05s", PauseFault(), writes).run(ctx)
    assert writes.released == [("n2", "g1", True)]


def test_no_sender_found_is_no_fault(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites([])  # the host found no process: pop raises, taken as none
    writes.writers = []
    nem = _nemesis("kill worker after write of counter", KillFault(), writes)
    nem.wait = 0.3
    nem.run(ctx)
    assert all(forward for _, _, forward in writes.released)
    ops = read_history(ctx.run_dir / "history.jsonl").records
    assert not [o for o in ops if o.extra.get("trigger")]


def test_a_held_read_ends_once_etcd_shows_its_group_written_again(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    started = time.monotonic()
    _nemesis("pause worker before read of counter for 5s", PauseFault(), writes).run(ctx)
    assert time.monotonic() - started < 3, "released at the write, not after 5 s"
    assert writes.reads == 3 and writes.released == [("n2", "g1", True)]


def test_a_held_write_keeps_its_length_whatever_is_written_meanwhile(tmp_path: Path) -> None:
    """When a paused writer resumes is the race a write point sets up (lab1's holder resuming
    at its lease's expiry): another writer's put does not end it early."""
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    started = time.monotonic()
    _nemesis("pause worker before write of counter for 0.6s", PauseFault(), writes).run(ctx)
    assert time.monotonic() - started >= 0.6 and writes.reads == 0


def test_a_holds_length_counts_from_the_proxys_firing_not_the_faults_start(
    tmp_path: Path,
) -> None:
    """Finding the sender took seconds under load while the call was already held: a pause
    `for 0.6s` whose call was held 0.5 s before the fault started lasts about 0.1 s more."""
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    fired = writes.write_point_fired

    def earlier(c: RunContext, gen: str) -> dict[str, Any] | None:
        note = fired(c, gen)
        assert note is not None
        return {**note, "time": c.now() - 0.5}

    writes.write_point_fired = earlier  # type: ignore[method-assign]
    started = time.monotonic()
    _nemesis("pause worker before write of counter for 0.6s", PauseFault(), writes).run(ctx)
    assert time.monotonic() - started < 0.45, "0.5 s of the 0.6 s had passed at the firing"


def test_a_held_call_runs_its_length_while_the_groups_values_stay(tmp_path: Path) -> None:
    """The code under test rewriting the counter with its own value moves etcd's revision but
    adds no value to the group, and a key leaving (a lease expired) is no writer: the hold is not
    cut short."""
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    looks = iter([{"a", "b"}, {"a", "b"}, {"a"}, set()])  # the same values, then keys leaving
    writes.group_state = lambda c, g: frozenset(next(looks, set()))  # type: ignore[method-assign]
    started = time.monotonic()
    _nemesis("pause worker before read of counter for 0.6s", PauseFault(), writes).run(ctx)
    assert time.monotonic() - started >= 0.6, "held for its whole length"
    assert writes.released == [("n2", "g1", True)]


def test_a_hold_is_only_the_proxys_no_signal_reaches_the_process(tmp_path: Path) -> None:
    ctx, cluster = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    _nemesis("hold worker before read of counter for 5s", HoldFault(), writes).run(ctx)
    assert writes.released == [("n2", "g1", True)]
    assert not [p for p in cluster.procs.values() if p.signals], "no process was signalled"
    with pytest.raises(RuntimeError, match="a write or read trigger's fault"):
        HoldFault().start(
            ctx, Resolved(spec="worker@n1", targets=(Target(node="n1", process="worker"),))
        )


def test_a_second_kill_is_armed_before_the_first_one_heals(tmp_path: Path) -> None:
    """`2 times` of a kill is one arming with one later firing chained in the proxies: nothing
    waits on the orchestrator to arm the redelivery's write."""
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker", "worker"])
    healed_when_armed: list[int] = []
    arm = writes.arm_write_point

    def spy(
        c: RunContext,
        op: str,
        moment: str,
        group: str,
        hold: float | None = None,
        then: int = 0,
    ) -> str:
        healed_when_armed.append(sum(1 for o in c.history.ops if o.extra.get("phase") == "heal"))
        return arm(c, op, moment, group, hold, then)

    writes.arm_write_point = spy  # type: ignore[method-assign]
    _nemesis("kill worker before write of counter for 0.05s 2 times", KillFault(), writes).run(ctx)
    assert writes.released == [("n2", "g1", False), ("n2", "g1-2", False)]
    assert healed_when_armed == [0], "one arming, before any heal"
    assert writes.thens == [1] and writes.holds == [None], "a kill's held write waits to be dropped"


def test_a_chained_firing_is_taken_by_any_proxy_once_the_one_before_fired(tmp_path: Path) -> None:
    """The later firing of a chain is armed in every proxy the moment the one before fired
    anywhere (the shared claims say so), while that one is still held: a redelivery's write on
    another node is caught at once. Each generation fires once in the cluster; past the chain,
    nothing fires."""
    claims = tmp_path / "claims"
    claims.mkdir()
    n1, n2, n3 = (WritePoints(tmp_path / n / "control", n, claims) for n in ("n1", "n2", "n3"))
    for n in ("n1", "n2", "n3"):
        _arm(tmp_path / n / "control", gen="g", op="write", moment="before",
             keys=["/lab3/counter"], then=1)  # fmt: skip
    first = n1.take("write", "before", ["/lab3/counter"], PEER)
    assert first is not None and first.gen == "g"
    second = n2.take("write", "before", ["/lab3/counter"], PEER)
    assert second is not None and second.gen == "g-2" and second.first
    assert json.loads((claims / "write-g-2").read_text())["node"] == "n2"
    assert n3.take("write", "before", ["/lab3/counter"], PEER) is None, "the chain is spent"
    # n1's own further call joins its held firing, not a new one
    joined = n1.take("write", "before", ["/lab3/counter"], PEER)
    assert joined is not None and joined.gen == "g" and not joined.first
    # a `then` out of bounds is no chain: one firing
    _arm(tmp_path / "n3" / "control", gen="h", op="write", moment="before",
         keys=["/lab3/x"], then=10_000)  # fmt: skip
    assert (got := n3.take("write", "before", ["/lab3/x"], PEER)) is not None and got.gen == "h"
    assert n3.take("write", "before", ["/lab3/y"], PEER) is None


def test_a_pauses_held_call_goes_on_by_itself_at_its_hold(tmp_path: Path) -> None:
    """When a held write lands must not wait on the orchestrator (seconds under load): the
    arming carries the fault's length and the proxy releases the call itself when it is over."""
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    _nemesis("pause worker before write of counter for 0.05s", PauseFault(), writes).run(ctx)
    assert writes.holds == [0.05]
    control = tmp_path / "control"
    points = WritePoints(control, "n2")
    _arm(control, gen="g6", op="write", moment="before", keys=["/lab3/counter"], hold=0.05)
    held = points.take("write", "before", ["/lab3/counter"], PEER)
    assert held is not None and held.until is not None
    extra = points.take("write", "before", ["/lab3/counter"], PEER)
    assert extra is not None and extra.until == held.until
    started = time.monotonic()
    assert points.wait(held) == {"forward": True, "released_by": "proxy"}
    assert time.monotonic() - started < 1.0, "no release file: the proxy's own clock"
    # a hold past the proxy's own limit, or not a number, is no hold
    for bad in (10_000, "1", True):
        _arm(control, gen=f"g7{bad}", op="write", moment="before", keys=["/lab3/x"], hold=bad)
        late = points.take("write", "before", ["/lab3/x"], PEER)
        assert late is not None and late.until is None


def test_a_calls_keys_are_decoded_only_when_something_is_armed(tmp_path: Path) -> None:
    control = tmp_path / "control"
    decoded: list[bool] = []

    def keys() -> list[str]:
        decoded.append(True)
        return ["/lab3/counter"]

    points = WritePoints(control, "n1")
    assert points.take("write", "before", keys, PEER) is None
    assert decoded == [], "nothing armed: the request is forwarded undecoded"
    _arm(control, gen="g9", op="write", moment="before", keys=["/lab3/counter"])
    assert points.take("write", "before", keys, PEER) is not None
    assert decoded == [True]


def test_a_broker_step_is_the_nats_proxys_point_and_every_call_names_its_op(
    tmp_path: Path,
) -> None:
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker"])
    _nemesis("kill worker after ack of tasks", KillFault(), writes).run(ctx)
    assert writes.armed == [("ack", "after", "tasks")]
    assert writes.released == [("n2", "g1", False)]  # the killed sender's held answer goes
    assert set(writes.ops) == {"ack"}, writes.ops  # the NATS proxy's, never the etcd proxy's
    ops = read_history(ctx.run_dir / "history.jsonl").records
    trigger = next(o.extra["trigger"] for o in ops if isinstance(o.extra.get("trigger"), dict))
    assert (trigger["decided_by"], trigger["op"], trigger["component"]) == (
        "nats-proxy", "ack", "worker",
    )  # fmt: skip
    # a pause at a broker point lasts its length: no etcd revision ends it
    writes = FakeWrites(["worker"])
    _nemesis("pause worker after delivery of tasks for 0.05s", PauseFault(), writes).run(ctx)
    assert writes.reads == 0 and writes.released == [("n2", "g1", True)]


def test_broker_phrases_bind_to_lab3s_groups() -> None:
    tr = bind(parse_trigger("pause relay before publish of tasks for 3s"), Lab3(), "lab3")
    assert (tr.write, tr.op, tr.point and tr.point.component) == ("tasks", "publish", "relay")
    assert tr.to_json()["decided_by"] == "nats-proxy"
    tr = bind(parse_trigger("pause worker after delivery of tasks"), Lab3(), "lab3")
    assert tr.point is not None and "NATS proxy" in tr.point.where
    with pytest.raises(TriggerError, match="'after delivery'"):
        bind(parse_trigger("kill worker before delivery of tasks"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match=r"no broker group 'task'.*did you mean 'tasks'"):
        bind(parse_trigger("kill worker before ack of task"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="no role 'nats' on the broker"):
        bind(parse_trigger("kill nats before ack of tasks"), Lab3(), "lab3")
    with pytest.raises(TriggerError, match="lab1 has no broker points"):
        bind(parse_trigger("kill holder before publish of orders"), Lab1(), "lab1")


class _AtRest:
    """A system that can tell when it rests (what it says is patched per test)."""

    can_tell = True

    def still(self, ctx: RunContext, now: float, quiet_since: float) -> bool:
        return True


def test_a_chained_firing_held_while_the_system_rests_is_still_faulted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later firing the proxies took by themselves is looked for even when the system is at
    rest from the start of the wait (a held write makes its services quiet: ack-on-redelivery
    ACKed before it); without such a firing, rest ends the wait as before."""
    from chaos.nemesis import writepoint

    # at rest from the first look of every later firing's wait (the first has no lookout)
    monkeypatch.setattr(writepoint._Quiet, "rested", lambda self: self._lookout is not None)
    ctx, _ = _ctx(tmp_path)
    writes = FakeWrites(["worker", "worker"])
    nem = _nemesis("kill worker before write of counter for 0.05s 2 times", KillFault(), writes)
    nem.rest = _AtRest  # type: ignore[assignment]
    nem.run(ctx)
    assert writes.released == [("n2", "g1", False), ("n2", "g1-2", False)]

    ctx, _ = _ctx(tmp_path / "unfired")
    writes = FakeWrites(["worker", "worker"])
    fired = writes.write_point_fired
    writes.write_point_fired = (  # type: ignore[method-assign]
        lambda c, gen: None if gen.endswith("-2") else fired(c, gen)
    )
    nem = _nemesis("kill worker before write of counter for 0.05s 2 times", KillFault(), writes)
    nem.rest = _AtRest  # type: ignore[assignment]
    nem.run(ctx)
    assert writes.released == [("n2", "g1", False)], "at rest, no second firing: not awaited"
    assert writes.disarmed >= 1


def test_a_record_that_cannot_be_rewritten_is_removed_so_the_gate_stays_shut(
    tmp_path: Path,
) -> None:
    file = tmp_path / "state" / "deliveries.json"
    file.parent.mkdir()
    record = InFlight(file)
    record.delivered(ACKS + "a", 40001)
    assert Gate(file, (ACKS,)).delivery() == ACKS + "a"
    (file.parent / f".{file.name}.tmp").mkdir()  # the next rewrite fails
    record.ended(ACKS + "a")
    assert not file.exists() and Gate(file, (ACKS,)).delivery() is None
