"""Write triggers: a fault applied at a write the etcd proxy holds, with no sign to the code under
test before it happens.

    kill worker after write of counter
    pause worker before write of counter for 3s [2 times]

An in-process hold point (chaos.nemesis.trigger) is reached by the code under test: it reads the
arming, it numbers the transactions, so a solution that has read chaos's source can take its safe
path only while a point is armed, or move a numbered point onto a decoy. Here the workload's
``WritePoints`` arm every node's root-owned etcd proxy; the proxy holds the first write of the
named key group (before it is forwarded, or after etcd answered it) and notes the sender's TCP
port; the host finds the process that holds that connection; the fault is applied to it while
its call is held; then the proxy lets the write go on — or drops it, when its sender died before it
(a fault whose row says ``dies``: a crash before the write). The code under test sees a slow call, and only after the
fault. The nemesis ops carry ``trigger`` with ``decided_by: etcd-proxy``.

A broker step is the same kind of point, decided by each node's root-owned NATS proxy
(chaos.node.nats_proxy): ``pause relay before publish of tasks``, ``kill worker after ack of
tasks``, ``pause worker after delivery of tasks``; its ops say ``decided_by: nats-proxy``.
"""

from __future__ import annotations

import time
from typing import Any

from chaos.core.capabilities import BROKER_OPS, WritePoints, chained
from chaos.core.context import RunContext
from chaos.core.rest import RestWatch
from chaos.core.target import Resolved
from chaos.nemesis.trigger import TriggerNemesis, _RestLookout, aimed_at

POLL = 0.01
# how often a held read looks whether its group was written since (one etcd read)
REREAD = 0.05


class WriteTriggerNemesis(TriggerNemesis):
    """A :class:`TriggerNemesis` whose point is a write held by the etcd proxy."""

    def __init__(self, *args: Any, writes: WritePoints, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writes = writes
        self._next: str | None = None  # an arming made before the previous firing healed
        self._chain: tuple[str, int] | None = None  # the last arming's first gen and `then`

    def _once(self, ctx: RunContext, n: int) -> bool:
        tr = self.trigger
        assert tr.point is not None and tr.write is not None, "bind() the write trigger first"
        note = self._await_write(ctx, n)
        if note is None:
            return False
        node, gen = note["node"], note["gen"]
        died = self.kind.dies
        if died and (tr.times is None or n + 1 < tr.times):
            # the next firing: the work the kill cuts short comes back (a redelivery after
            # AckWait) on another node while the host still seeks the sender (at load 20 the
            # orchestrator armed it again 1.7 s after the firing, after the redelivery's write:
            # ack-on-redelivery valid under double-kill). A bounded `N times` chained it in the
            # proxies at the first arming; past a chain, it is armed at once, before the kill. A
            # matching call of the dying process is held with this firing and dropped with it
            self._next = self._chained_after(gen) or self.writes.arm_write_point(
                ctx, tr.op, tr.moment, tr.write
            )
        try:
            resolved, record = self._aimed_write(ctx, note, n)
        except BaseException:
            self._drop_next(ctx)
            raise
        # a held read ends once another writer puts a value new to its group; a held write, and
        # any fault's process, keeps its `for`: when it resumes is the race (lab1's holder
        # resuming at its lease's expiry, a stale write landing after the others' commits)
        fired = self.writes.group_state(ctx, tr.write) if tr.op == "read" and not died else None
        intent = {"target": resolved.spec, "duration": self.duration, "trigger": tr.phrase}
        try:
            fid = self.fault.start(ctx, resolved, intent=intent, trigger=record)
        except BaseException:
            self._drop_next(ctx)
            self.writes.release_write_point(ctx, node, gen, forward=True, op=tr.op)
            raise
        if died:
            # the sender is gone: a write held before it is dropped (it never left the process)
            self.writes.release_write_point(ctx, node, gen, forward=False, op=tr.op)
        ctx.progress(
            f"'{tr.phrase}' fired on {node} ({record['component']}, {record['decided_by']})"
        )
        self._last_held(ctx, fired, note.get("time"))
        if not died:
            # the held call goes on at the fault's end, before the heal: a write held before it
            # lands late (stale), and its answer waits in the socket of the stopped process
            self.writes.release_write_point(ctx, node, gen, forward=True, op=tr.op)
        ctx.faults.heal(fid)
        return True

    def _chained_after(self, gen: str) -> str | None:
        """The generation the proxies take after ``gen`` in the last arming's chain, or None."""
        if self._chain is None:
            return None
        first, then = self._chain
        gens = [chained(first, k) for k in range(1, then + 2)]
        return gens[gens.index(gen) + 1] if gen in gens[:-1] else None

    def _drop_next(self, ctx: RunContext) -> None:
        """Disarm the next firing armed ahead: this one failed, and nothing will await it."""
        if self._next is not None:
            self._next = None
            self.writes.disarm_write_point(ctx, op=self.trigger.op)

    def _last_held(
        self, ctx: RunContext, fired: frozenset[str] | None, held_at: float | None = None
    ) -> None:
        """The fault's length from the held call's firing; a held read's ends sooner once etcd (read by the orchestrator)
        shows a key of the group with a value it did not hold at the firing: another process did
        what the held one was held back from (the race the point is for), and the read's answer
        is stale from then on; a longer hold only runs the read into the client's own deadline.
        ``for`` bounds it. New values, not revisions: the code under test could otherwise cut every
        hold short by rewriting the counter with its own value, a write no checker names; and
        not a key leaving: lab1's lock vanishing when its lease expires is no takeover."""
        tr = self.trigger
        # counted from the moment the proxy held the call (its note), not from the fault's
        # start: finding the sender and applying the fault took seconds under load, and the
        # call was held all along (lab1's holder resumed after its successor's whole job)
        left = self.duration
        if isinstance(held_at, int | float):
            left = max(0.0, self.duration - max(0.0, ctx.now() - held_at))
        if fired is None or tr.write is None:
            ctx.stop.wait(left)
            return
        deadline = time.monotonic() + left
        while not ctx.stop.wait(REREAD) and time.monotonic() < deadline:
            now = self.writes.group_state(ctx, tr.write)
            if now is not None and now - fired:
                ctx.progress(f"'{tr.phrase}': {tr.write} changed by another writer: released")
                return

    def _await_write(self, ctx: RunContext, n: int) -> dict[str, Any] | None:
        """Arm the proxies and wait for a write of the trigger's component to be held: the proxy's
        note with ``gen``, or None (the time limit; for a later firing, the system at rest). A
        write of another component is let go and the point armed again."""
        tr = self.trigger
        assert tr.point is not None and tr.write is not None
        watch = self.rest() if self.rest is not None and n > 0 else None
        deadline = ctx.now() + self.wait
        quiet = _Quiet(ctx, watch)
        try:
            # a firing armed ahead (chained in the proxies, or armed before the kill) is looked
            # for even when the system rests: its write may be held already — the proxy holds it,
            # so the services fall quiet (ack-on-redelivery ACKs first, and the broker rests)
            while self._next is not None or (
                not ctx.stop.is_set() and ctx.now() < deadline and not quiet.rested()
            ):
                # a held call goes on by itself after `for` (the proxy's clock), so when it lands
                # does not wait on the orchestrator's latency; one whose process dies waits to be
                # dropped
                hold = None if self.kind.dies else self.duration
                gen = self._next
                if gen is None:
                    # a kill's later firings are chained in the proxies themselves
                    then = tr.times - 1 if self.kind.dies and tr.times else 0
                    gen = self.writes.arm_write_point(
                        ctx, tr.op, tr.moment, tr.write, hold, then=then
                    )
                    self._chain = (gen, then)
                    which = "NATS proxies' broker" if tr.op in BROKER_OPS else "etcd proxies' write"
                    ctx.progress(f"armed the {which} point for '{tr.phrase}'")
                self._next = None
                self.armed.set()
                note = self._fired(ctx, gen, deadline, quiet)
                if note is None or self._chained_after(gen) is None:
                    self.writes.disarm_write_point(ctx, op=tr.op)
                # a proxy may fire between the last look and the disarm
                note = note or self.writes.write_point_fired(ctx, gen)
                if note is None:
                    break
                note["gen"] = gen
                writer = self._writer(ctx, note)
                if writer == tr.point.component:
                    note["component"] = writer
                    return note
                self.writes.release_write_point(ctx, note["node"], gen, forward=True, op=tr.op)
                ctx.progress(
                    f"'{tr.phrase}': the held write on {note['node']} was {writer or 'no known process'}'s,"
                    f" not {tr.point.component}'s: let go, armed again"
                )
        finally:
            quiet.close()
        said = "came to rest" if quiet.rested() else "ended its wait"
        ctx.progress(f"'{tr.phrase}': no {tr.op} of {tr.write} was held before the run {said}")
        return None

    def _fired(
        self, ctx: RunContext, gen: str, deadline: float, quiet: _Quiet
    ) -> dict[str, Any] | None:
        while True:  # looked at once at least: a chained firing may have come already
            note = self.writes.write_point_fired(ctx, gen)
            if note is not None:
                return note
            if ctx.stop.is_set() or ctx.now() >= deadline or quiet.rested():
                return None
            ctx.stop.wait(POLL)

    def _writer(self, ctx: RunContext, note: dict[str, Any]) -> str | None:
        port = note.get("port")
        if not isinstance(port, int):
            return None
        try:
            return self.writes.write_point_writer(ctx, note["node"], port, op=self.trigger.op)
        except Exception:  # the node or the process gone: no process to fault
            return None

    def _aimed_write(
        self, ctx: RunContext, note: dict[str, Any], n: int
    ) -> tuple[Resolved, dict[str, Any]]:
        tr = self.trigger
        node, component = str(note["node"]), str(note["component"])
        resolved = aimed_at(self.kind, ctx, node, component)
        record = {
            "phrase": tr.phrase,
            "hold": tr.point.file if tr.point else None,
            "kind": tr.kind,
            "write": tr.write,
            "op": tr.op,
            "decided_by": _decider(tr.op),
            "node": node,
            "component": component,
            "pid": ctx.cluster.pid(node, component),
            "keys": note.get("keys") or [],
            "time": note.get("time"),
            "firing": n + 1,
        }
        if isinstance(note.get("delivery"), str):
            # a gated read point: the delivery the node's NATS proxy had in flight at the read
            record["delivery"] = note["delivery"]
        return resolved, record


def _decider(op: str) -> str:
    """The proxy that decides a point of ``op``: a broker step's is the NATS proxy."""
    return "nats-proxy" if op in BROKER_OPS else "etcd-proxy"


class _Quiet:
    """Whether the system came to rest while a later firing is awaited (nothing left in it can
    write the group again); never for the first firing, which waits the whole time limit."""

    def __init__(self, ctx: RunContext, watch: RestWatch | None) -> None:
        self._lookout = _RestLookout(ctx, watch) if watch is not None and watch.can_tell else None
        if self._lookout is not None:
            self._lookout.__enter__()

    def rested(self) -> bool:
        return self._lookout is not None and self._lookout.rested.is_set()

    def close(self) -> None:
        if self._lookout is not None:
            self._lookout.__exit__(None, None, None)
