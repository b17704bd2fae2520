"""The lab1 ``orders`` service on one node: a scheduler that runs the nightly reconciliation job.

Run as ``python3 -m chaos.workloads.lab1.service`` with its configuration in the environment (set
by the orchestrator; times are in lab *units*, ``CHAOS_LAB1_UNIT`` seconds each)::

    CHAOS_NODE                 this replica's name (n1, n2, ...)                       required
    CHAOS_SOLUTION             folder (or file) of the protocol.py to load             required
    CHAOS_LIVE                 live folder: events/ is written, control/ only read     /chaos
    CHAOS_ETCD                 host:port,... (chaos gives its node's etcd proxy only)    127.0.0.1:2379
    CHAOS_LAB1_UNIT            seconds per unit                                        0.1
    CHAOS_LAB1_PERIOD          units between two attempts of the scheduler             5
    CHAOS_LAB1_JOB             units a night's job normally takes                      required
    CHAOS_LAB1_JOB_WORST       units of a slow night                                   20
    CHAOS_LAB1_SLOW_EVERY      every k-th night is slow (0: never)                     0
    CHAOS_LAB1_LOCK_AT_MOST    lockAtMostFor                                           required
    CHAOS_LAB1_LOCK_AT_LEAST   lockAtLeastFor                                          required
    CHAOS_LAB1_RENEW           renew the lease every so many units (0: never)          required
    CHAOS_LAB1_ORDERS          orders reconciled each night (o1..oN)                   5
    CHAOS_LAB1_NIGHTS          last night to run (0: no end)                           0
    CHAOS_LAB1_CLOCK_SKEW      seconds added to this node's clock                      0
    CHAOS_LAB1_CRON            night length in units: cron mode (0: nights back to back) required
    CHAOS_LAB1_EPOCH           cron mode: true wall time at which night 1 begins
    CHAOS_LAB1_WALL_BASE       cron mode: true wall time minus CLOCK_MONOTONIC (the host's)

Each period the scheduler finds the first night not yet done, tries ``acquire``, and if it got the
lock runs that night's job: for every order not yet reconciled for the night, wait a share of the
job's duration, then ``write_change``. A night is marked done only when every order was handled,
so the next night starts only after this one. The job gives up at the first stale write (it lost
the lock) and when a renewal fails. Fault holds (see chaos.node.runtime) sit after the grant
(``lock-acquired``), before each write (``write``) and between a solution's reads and its
transaction (``write-commit``), and between acquire's read of the lock and its write
(``acquire-commit``). A successful renewal is reported as ``lock-renewed``.

Cron mode (``CHAOS_LAB1_CRON`` > 0) is ShedLock's own setting, for EX05: each replica's scheduler
fires night n when *its own wall clock* reads ``epoch + (n-1) * night`` (a ``@Scheduled(cron)``
on the node's clock, which a clock fault moves), once per night, and runs the whole job whether or
not it already ran (a cron job does not know). The lock's times are the *store's* clock (the
true time, from CLOCK_MONOTONIC and the host's offset: ShedLock's ``usingDbTime()``). A replica
whose clock is behind fires late; if the holder's ``lock_until = max(locked_at +
lockAtLeastFor, end of job)`` has passed by then, it takes the lock and the night runs twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import etcd3

from chaos.cluster import clocks
from chaos.node import solution
from chaos.node.runtime import EventLog, Hooks, Identity, env
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.protocol_api import (
    OUTCOMES,
    STALE,
    Change,
    Clock,
    Lock,
    Store,
)

COMPONENT = "orders"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The service's configuration, times in units (see the module docstring). The run's ``-o``
    options (chaos.workloads.lab1.workload.OPTIONS: ``job``, ``lock_at_most``,
    ``lock_at_least``, ``renew``, ``cron``) have no default here: the orchestrator always sets
    them, given or at their declared default, so that the lab's defaults are written once."""

    job: float
    at_most: float
    at_least: float
    renew: float
    cron: float
    unit: float = 0.1
    period: float = 5.0
    job_worst: float = 20.0
    slow_every: int = 0
    orders: int = 5
    nights: int = 0
    clock_skew: float = 0.0
    epoch: float = 0.0
    wall_base: float = 0.0

    @staticmethod
    def from_env() -> Settings:
        d = {f.name: f.default for f in dataclasses.fields(Settings)}
        return Settings(
            unit=float(env("CHAOS_LAB1_UNIT", str(d["unit"]))),
            period=float(env("CHAOS_LAB1_PERIOD", str(d["period"]))),
            job=float(env("CHAOS_LAB1_JOB")),
            job_worst=float(env("CHAOS_LAB1_JOB_WORST", str(d["job_worst"]))),
            slow_every=int(env("CHAOS_LAB1_SLOW_EVERY", str(d["slow_every"]))),
            at_most=float(env("CHAOS_LAB1_LOCK_AT_MOST")),
            at_least=float(env("CHAOS_LAB1_LOCK_AT_LEAST")),
            renew=float(env("CHAOS_LAB1_RENEW")),
            orders=int(env("CHAOS_LAB1_ORDERS", str(d["orders"]))),
            nights=int(env("CHAOS_LAB1_NIGHTS", str(d["nights"]))),
            clock_skew=float(env("CHAOS_LAB1_CLOCK_SKEW", str(d["clock_skew"]))),
            cron=float(env("CHAOS_LAB1_CRON")),
            epoch=float(env("CHAOS_LAB1_EPOCH", str(d["epoch"]))),
            wall_base=float(env("CHAOS_LAB1_WALL_BASE", str(d["wall_base"]))),
        )

    def seconds(self, units: float) -> float:
        return units * self.unit

    def job_seconds(self, night: int) -> float:
        slow = self.slow_every > 0 and night % self.slow_every == 0
        return self.seconds(self.job_worst if slow else self.job)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "period": self.period,
            "job": self.job,
            "job_worst": self.job_worst,
            "slow_every": self.slow_every,
            "lock_at_most": self.at_most,
            "lock_at_least": self.at_least,
            "renew": self.renew,
            "orders": self.orders,
            "nights": self.nights,
            "cron": self.cron,
        }


def etcd_client(spec: str) -> Any:
    endpoints = []
    for ep in spec.split(","):
        host, _, port = ep.strip().rpartition(":")
        endpoints.append(etcd3.Endpoint(host, int(port), secure=False, time_retry=1.0))
    return etcd3.MultiEndpointEtcd3Client(endpoints, timeout=3, failover=True)


def _is_store_error(e: BaseException) -> bool:
    """etcd unavailable or timed out, as opposed to a bug in the solution."""
    if isinstance(e, etcd3.exceptions.Etcd3Exception):
        return True
    return type(e).__module__.startswith("grpc")


class JobAborted(Exception):
    pass


class AcquireStore:
    """The store as ``acquire`` sees it: the same store, with the ``acquire-commit`` fault hold
    right before each of its transactions — between acquire's read of the lock record and its
    write, where an acquire without a compare-and-swap loses (``pause orders before
    acquire-commit``). Unarmed, the hold costs one file lookup."""

    def __init__(self, store: Store, hold: Any) -> None:
        self._store = store
        self._hold = hold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def txn(self, compare: Any, success: Any, failure: Any = ()) -> tuple[bool, list[Any]]:
        self._hold()
        return self._store.txn(compare, success, failure)


class Service:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.ident = Identity(node=env("CHAOS_NODE"), component=COMPONENT)
        root = Path(env("CHAOS_LIVE", "/chaos"))
        self.events = EventLog(root / "events" / f"{self.ident.node}-{COMPONENT}.jsonl", self.ident)
        self.hooks = Hooks(root / "control", self.ident, self.events)
        self.solution_path = env("CHAOS_SOLUTION")
        self.protocol: ModuleType = solution.load(Path(self.solution_path))
        self.etcd = etcd_client(env("CHAOS_ETCD", "127.0.0.1:2379"))
        self.clock = Clock(self.settings.clock_skew)
        self.store = Store(
            self.etcd, node=self.ident.node, clock=self.clock, before_write=self._before_write
        )
        self.store.set_txn_hooks(self.hooks)
        self.acquire_store = AcquireStore(self.store, lambda: self.hooks.hold("acquire-commit"))
        s = self.settings
        self.lock = Lock(
            name=keys.JOB,
            me=self.ident.node,
            at_most=s.seconds(s.at_most),
            at_least=s.seconds(s.at_least),
        )
        self.orders = keys.order_ids(s.orders)
        self._last_error: dict[str, str] = {}
        self._rng = random.Random(self.ident.node)

    # ------------------------------------------------------------ helpers

    def _before_write(self, change: Change) -> None:
        self.hooks.hold("write-commit")

    def _protocol_error(self, where: str, e: BaseException) -> None:
        msg = f"{type(e).__name__}: {e}"
        # a TODO raises on every period: report it once, not twice a second
        if self._last_error.get(where) != msg:
            self._last_error[where] = msg
            self.events.emit("protocol-error", where=where, error=msg)
            traceback.print_exc()

    def _call(self, where: str, fn: Any, *args: Any) -> Any:
        """Run a solution function; store errors propagate, solution bugs become JobAborted."""
        try:
            with self.store.calling(where):  # numbers its transactions: txn points
                return fn(*args)
        except Exception as e:
            if _is_store_error(e):
                raise
            self._protocol_error(where, e)
            raise JobAborted(where) from e

    def next_night(self) -> int:
        done = set()
        for _value, meta in self.etcd.get_prefix(keys.NIGHTS_PREFIX, keys_only=True):
            done.add(int(meta.key.decode().rsplit("/", 1)[1]))
        n = 1
        while n in done:
            n += 1
        return n

    def _write_config(self) -> None:
        cfg = {**self.settings.to_json(), "lock": keys.JOB, "order_ids": self.orders}
        self.store.txn(
            compare=[self.store.absent(keys.CONFIG)], success=[self.store.put(keys.CONFIG, cfg)]
        )

    # ------------------------------------------------------------ the scheduler

    def run(self) -> None:
        while True:
            try:
                self._write_config()
                break
            except Exception as e:
                if not _is_store_error(e):
                    raise
                self.events.emit("etcd-error", where="config", error=f"{type(e).__name__}: {e}")
                time.sleep(self.settings.seconds(self.settings.period))
        self.events.emit(
            "start", solution=self.solution_path, lock=keys.JOB, **self.settings.to_json()
        )
        if self.settings.cron > 0:
            self.run_cron()
            return
        period = self.settings.seconds(self.settings.period)
        next_at = time.monotonic()
        while True:
            # a little jitter so that three replicas do not knock at the same instant every time
            next_at += period * (0.9 + 0.2 * self._rng.random())
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at, time.monotonic())
            try:
                self.tick()
            except Exception as e:
                if not _is_store_error(e):
                    raise
                self.events.emit("etcd-error", where="tick", error=f"{type(e).__name__}: {e}")

    # ------------------------------------------------------------ cron mode (EX05)

    def store_now(self) -> float:
        """The store's clock: the true time (CLOCK_MONOTONIC is the kernel's, never faked)."""
        return time.monotonic() + self.settings.wall_base

    def clock_offset(self) -> float:
        """This replica's wall clock less the store's, read so that a preemption between the
        clocks' reads does not count."""
        return round(clocks.wall_minus_monotonic(5, self.clock.now) - self.settings.wall_base, 4)

    def night_on_my_clock(self) -> int:
        """The night this replica's own wall clock is in (0 before the first)."""
        s = self.settings
        return max(0, int((self.clock.now() - s.epoch) // s.seconds(s.cron)) + 1)

    def run_cron(self) -> None:
        # a cron daemon does not run the firings it missed: a restarted replica starts from now
        last = self.night_on_my_clock()
        wake = threading.Event()
        while True:
            wake.wait(0.005)  # the node's clock is read again and again: a jump takes effect
            night = self.night_on_my_clock()
            if night <= last:
                continue
            last = night
            if self.settings.nights and night > self.settings.nights:
                continue
            try:
                self.cron_fire(night)
            except Exception as e:
                if not _is_store_error(e):
                    raise
                self.events.emit("etcd-error", where="cron", error=f"{type(e).__name__}: {e}")

    def cron_fire(self, night: int) -> None:
        now = self.store_now()
        offset = self.clock_offset()
        try:
            token = self._call("acquire", self.protocol.acquire, self.acquire_store, self.lock, now)
        except JobAborted:
            return
        if token is None:
            self.events.emit("lock-busy", night=night, clock_offset=offset)
            return
        token = int(token)
        granted_at = time.monotonic()
        record, _ = self.store.get(keys.lock(self.lock.name))
        until = now + self.lock.at_most
        if isinstance(record, dict) and record.get("token") == token:
            until = float(record.get("lock_until", until))
        self.events.emit(
            "lock-acquired",
            token=token,
            night=night,
            until=until,
            locked_at=now,
            ttl=round(until - self.store_now(), 6),
            clock_offset=offset,
            fired_by="cron",
        )
        self.hooks.hold("lock-acquired")
        with contextlib.suppress(JobAborted):  # a solution's bug is reported; release anyway
            self.run_job(night, token, list(self.orders), granted_at)
        try:
            ok = self._call(
                "release", self.protocol.release, self.store, self.lock, token, self.store_now()
            )
        except JobAborted:
            return
        if ok:
            record, _ = self.store.get(keys.lock(self.lock.name))
            released = record.get("lock_until") if isinstance(record, dict) else None
            self.events.emit("lock-released", token=token, night=night, until=released)

    def tick(self) -> None:
        limit = self.settings.nights
        if limit and self.next_night() > limit:
            return
        now = self.clock.now()
        try:
            token = self._call("acquire", self.protocol.acquire, self.acquire_store, self.lock, now)
        except JobAborted:
            return
        if token is None:
            return
        token = int(token)
        granted_at = time.monotonic()
        # planned inside the lock, like a job's first SELECT: the previous holder may have finished
        # a night meanwhile, and a crashed one may have done part of this night
        night = self.next_night()
        todo = [o for o in self.orders if int(self.store.read_order(o)[0].get("night", 0)) < night]
        record, _ = self.store.get(keys.lock(self.lock.name))
        until = now + self.lock.at_most
        if isinstance(record, dict) and record.get("token") == token:
            until = float(record.get("lock_until", until))
        self.events.emit(
            "lock-acquired",
            token=token,
            night=night,
            until=until,
            locked_at=now,
            ttl=round(until - self.clock.now(), 6),
        )
        # a process stopped here wakes up with a plan made under a lease that has since expired
        self.hooks.hold("lock-acquired")
        if limit and night > limit:
            self.release(night, token)
            return
        try:
            still_holder = self.run_job(night, token, todo, granted_at)
        except JobAborted:
            still_holder = True
        if still_holder:
            self.release(night, token)

    def release(self, night: int, token: int) -> None:
        try:
            ok = self._call(
                "release", self.protocol.release, self.store, self.lock, token, self.clock.now()
            )
        except JobAborted:
            return
        if ok:
            record, _ = self.store.get(keys.lock(self.lock.name))
            until = record.get("lock_until") if isinstance(record, dict) else None
            self.events.emit("lock-released", token=token, night=night, until=until)

    def run_job(self, night: int, token: int, todo: list[str], granted_at: float) -> bool:
        """Reconcile ``todo`` for ``night``; False when the job learnt it lost the lock."""
        self.events.emit("job-start", token=token, night=night, orders=todo)
        try:
            outcome, reason = self._job_body(night, token, todo, granted_at)
        except JobAborted:
            self.events.emit(
                "job-end", token=token, night=night, outcome="aborted", reason="protocol-error"
            )
            raise
        except Exception as e:
            self.events.emit(
                "job-end",
                token=token,
                night=night,
                outcome="aborted",
                reason="etcd-error",
                error=f"{type(e).__name__}: {e}",
            )
            raise
        if outcome == "done":
            self.events.emit("job-end", token=token, night=night, outcome="done")
            return True
        self.events.emit("job-end", token=token, night=night, outcome="aborted", reason=reason)
        return False

    def _job_body(
        self, night: int, token: int, todo: list[str], granted_at: float
    ) -> tuple[str, str]:
        s = self.settings
        share = s.job_seconds(night) / max(1, len(self.orders))
        # counted from the grant: a holder stopped before its job must renew before it acts
        renewed_at = granted_at
        extend = getattr(self.protocol, "extend", None)
        for order in todo:
            due = time.monotonic() - renewed_at >= s.seconds(s.renew)
            if s.renew > 0 and extend is not None and due:
                if not self._call("extend", extend, self.store, self.lock, token, self.clock.now()):
                    self.events.emit("renewal-failed", token=token, night=night)
                    return "aborted", "renewal-failed"
                renewed_at = time.monotonic()
                # what the solution claims: it still holds the lock (lease-exclusivity checks it)
                self.events.emit("lock-renewed", token=token, night=night)
            time.sleep(share)  # the work of reconciling this order
            if self._write(order, night, token) == STALE:
                return "aborted", "rejected-stale"
        self.store.txn(
            compare=[self.store.absent(keys.night_done(night))],
            success=[
                self.store.put(
                    keys.night_done(night),
                    {
                        "night": night,
                        "node": self.ident.node,
                        "token": token,
                        "at": self.clock.now(),
                    },
                )
            ],
        )
        return "done", ""

    def _write(self, order: str, night: int, token: int) -> Any:
        """The solution's write of one order's change; its outcome (one of OUTCOMES, as the
        solution returned it), reported. Any other outcome is a protocol error that aborts the
        job."""
        self.hooks.hold("write")
        change = Change(
            order=order, night=night, amount=keys.change_amount(order, night), token=token
        )
        try:
            outcome = self._call(
                "write_change", self.protocol.write_change, self.store, self.lock, change
            )
        except JobAborted:
            raise
        except Exception as e:
            # the transaction may have been applied: the final state will tell
            self.events.emit(
                "write",
                order=order,
                night=night,
                token=token,
                amount=change.amount,
                outcome="unknown",
                error=f"{type(e).__name__}: {e}",
            )
            raise
        if outcome not in OUTCOMES:
            self._protocol_error(
                "write_change",
                ValueError(f"write_change returned {outcome!r}, expected one of {OUTCOMES}"),
            )
            raise JobAborted("write_change")
        self.events.emit(
            "write",
            order=order,
            night=night,
            token=token,
            amount=change.amount,
            outcome=outcome,
        )
        return outcome


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        raise SystemExit("usage: python3 -m chaos.workloads.lab1.service (configured by env)")
    Service().run()


if __name__ == "__main__":
    threading.current_thread().name = "main"
    main()
