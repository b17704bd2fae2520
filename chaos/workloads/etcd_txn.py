"""What the multi-key transactional etcd workloads (``etcd-append``, ``etcd-rw-register``) share.

A transaction is 1-4 micro-ops over a small pool of active keys, each a read of a key or a write
of a value unique to its key (one counter for the run), so that every version a read returns
names its writer; a model may have some writes read their key first (:class:`Generator`). A key is retired after :data:`MAX_WRITES` writes, so that values stay small and the
checker's per-key work bounded, as Jepsen's generators do. The history's ops are ``f: "txn"`` with
``[f, key, value]`` micro-ops (docs/history-format.md), checked by :mod:`chaos.checkers.elle`
under ``-o consistency=...`` (default strict-serializable). A data model (:class:`TxnModel`) says
how micro-ops change a key's value and how a value is stored in etcd; everything else is here.

Two clients (``-o client=safe|unsafe``):

- ``safe`` (the default): one etcd transaction reads every key the transaction must read from
  etcd, at one revision; the writes are then committed by a second etcd transaction that compares
  each of those keys' mod revisions with what was read — if another client wrote one meanwhile,
  nothing is written, and the transaction is tried again from its read up to the model's
  ``attempts`` (etcd-rw-register: 1), then ``fail``. Every committed transaction thus took effect at its commit, between its
  invocation and its completion: strict serializable.
- ``unsafe``: read-modify-write without compares: each key is read on its own, and the new values
  are written back blindly after some work — two clients that read the same key both write it,
  one's update is lost (a lost update; with other keys, G2 and G-single cycles).

A transaction whose read fails, or whose compare failed, is ``fail`` (nothing was written); one
whose write times out or loses its connection is ``info`` (it may have been applied).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos.checkers.elle import DEFAULT_CONSISTENCY, NAMES, check_transactions, transactions
from chaos.checkers.elle.loading import raw_ops
from chaos.checkers.verdict import CheckResult
from chaos.core.capabilities import option_values, stored_option_values
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads.generic import classify, drive
from chaos.workloads.on_etcd import OnEtcd, final_values
from chaos.workloads.systems import etcd

ACTIVE_KEYS = 3
MAX_WRITES = 24
# seconds between the unsafe client's read and its write: the work a client does
UNSAFE_THINK = 0.05
# The -o options of every transactional etcd workload, declared once
CLIENT = WorkloadOption(
    "client",
    str,
    "safe",
    "`safe`: a transaction commits only if no key it read changed meanwhile (strict "
    "serializable); `unsafe`: read-modify-write without compares (lost updates)",
    choices=("safe", "unsafe"),
)
CONSISTENCY = WorkloadOption(
    "consistency",
    str,
    DEFAULT_CONSISTENCY,
    "the consistency model the checker holds the history to (any `--consistency` name)",
    choices=NAMES,
    metavar="MODEL",
)
OPTIONS: tuple[WorkloadOption, ...] = (CLIENT, CONSISTENCY)

Mops = list[list[Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnModel:
    """How one data model's micro-ops meet etcd. Each function must be pure: the safe client may
    run a transaction's micro-ops again after a failed compare.

    - ``read(value)``: what a read of a key holding ``value`` returns (``value`` is None for a
      key never written).
    - ``update(value, v)``: the key's new value after the write micro-op of ``v``.
    - ``must_read(mops)``: the keys whose value the transaction needs from etcd (the safe
      client's compares guard exactly these).
    - ``encode`` / ``decode``: a value as etcd stores it, and back.
    """

    data_model: str  # the checker's data model: list-append or rw-register
    prefix: str  # the keys' etcd prefix
    write: str  # the micro-op that writes: append or w
    final: str  # the final state's name for the keys' values
    read: Callable[[Any], Any]
    update: Callable[[Any, Any], Any]
    must_read: Callable[[Mops], set[int]]
    encode: Callable[[Any], str]
    decode: Callable[[bytes], Any]
    attempts: int  # the safe client's attempts at one transaction whose compare fails
    read_first: float = 0.0  # the generator's chance of reading a key before writing it

    def apply(self, mops: Mops, values: dict[int, Any]) -> tuple[Mops, set[int]]:
        """Run the micro-ops in order over ``values`` (key → value, changed in place; a key
        absent was never written): the completed micro-ops (a read sees the transaction's own
        earlier writes) and the keys written."""
        done: Mops = []
        written: set[int] = set()
        for f, k, v in mops:
            if f == "r":
                done.append(["r", k, self.read(values.get(k))])
            else:
                values[k] = self.update(values.get(k), v)
                written.add(k)
                done.append([f, k, v])
        return done, written


class _Aborted(Exception):
    """The safe client's compare failed at every attempt: nothing was written."""


class EtcdTxn(OnEtcd):
    """A transactional workload on the real 3-member etcd; subclasses name it and its model."""

    name: str
    model: TxnModel
    options = OPTIONS

    def run_client(self, ctx: RunContext) -> None:
        m = self.model
        unsafe = option_values(self, ctx.spec)["client"] == "unsafe"
        next_txn = Generator(ctx.rng_for("workload"), m.write, m.read_first)
        clients = etcd.ProcessClients(ctx)

        def step(process: int) -> None:
            mops = next_txn()
            node = ctx.cluster.nodes[process % len(ctx.cluster.nodes)]
            ctx.history.record(process=process, type=OpType.INVOKE, f="txn", value=mops,
                               extra={"node": node})  # fmt: skip
            wrote = [False]
            try:
                c = clients.get(process)
                done = _unsafe(c, m, mops, wrote) if unsafe else _safe(c, m, mops, wrote)
                ctx.history.record(process=process, type=OpType.OK, f="txn", value=done)
            except _Aborted as e:
                ctx.history.record(process=process, type=OpType.FAIL, f="txn", value=mops,
                                   error=str(e))  # fmt: skip
            except Exception as e:
                # before any write was sent nothing happened; after, it may have
                t = OpType.INFO if wrote[0] else OpType.FAIL
                ctx.history.record(process=process, type=t, f="txn", value=mops,
                                   error=classify(e))  # fmt: skip
                clients.drop(process)

        with clients:
            drive(ctx, step, default_rate=40.0)

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        m = self.model
        return final_values(ctx, m.final, m.prefix, m.decode)

    def check(self, run: StoredRun) -> list[CheckResult]:
        consistency = str(stored_option_values(self, run.spec)["consistency"])
        txns, skipped = transactions(raw_ops(run.history))
        return [
            check_transactions(
                txns, self.model.data_model, consistency, time_limit=60.0, skipped=skipped
            )
        ]


class Generator:
    """Transactions of 1-4 micro-ops, half reads, over :data:`ACTIVE_KEYS` active keys; each write
    a value never written before (so unique per key); a key written :data:`MAX_WRITES` times is
    replaced by a fresh one. With ``read_first`` > 0, a write of a key the transaction has not
    touched yet is preceded by a read of it with that probability (a read-modify-write: the
    version read precedes the one written, which is how an rw-register's versions are ordered).
    Safe to call from every client thread."""

    def __init__(self, rng: Any, write: str, read_first: float = 0.0) -> None:
        self._rng = rng
        self._write = write
        self._read_first = read_first
        self._lock = threading.Lock()
        self._value = 0
        self._next_key = ACTIVE_KEYS
        self._active = list(range(ACTIVE_KEYS))
        self._writes = dict.fromkeys(self._active, 0)

    def __call__(self) -> Mops:
        rng = self._rng
        with self._lock:
            mops: Mops = []
            touched: set[int] = set()
            for _ in range(rng.randint(1, 4)):
                k = rng.choice(self._active)
                if rng.random() < 0.5:
                    mops.append(["r", k, None])
                    touched.add(k)
                    continue
                if self._read_first and k not in touched and rng.random() < self._read_first:
                    mops.append(["r", k, None])
                touched.add(k)
                self._value += 1
                mops.append([self._write, k, self._value])
                self._writes[k] = self._writes.get(k, 0) + 1
                if self._writes[k] >= MAX_WRITES:
                    self._active[self._active.index(k)] = self._next_key
                    self._next_key += 1
            return mops


def _key(m: TxnModel, k: int) -> str:
    return f"{m.prefix}{k}"


def _safe(c: Any, m: TxnModel, mops: Mops, wrote: list[bool]) -> Mops:
    keys = sorted(m.must_read(mops))
    for _ in range(m.attempts):
        values: dict[int, Any] = {}
        revs = dict.fromkeys(keys, 0)
        if keys:
            _, got = c.transaction(compare=[], success=[c.transactions.get(_key(m, k))
                                                       for k in keys], failure=[])  # fmt: skip
            for k, kvs in zip(keys, got, strict=True):
                if kvs:
                    value, meta = kvs[0]
                    values[k], revs[k] = m.decode(value), int(meta.mod_revision)
        done, written = m.apply(mops, values)
        if not written:
            return done  # one read of every key at one revision: nothing to commit
        wrote[0] = True
        ok, _ = c.transaction(
            compare=[c.transactions.mod(_key(m, k)) == revs[k] for k in keys],
            success=[c.transactions.put(_key(m, k), m.encode(values[k])) for k in sorted(written)],
            failure=[],
        )
        if ok:
            return done
        wrote[0] = False  # the compare failed: this attempt wrote nothing
    raise _Aborted(f"another client changed a key it read ({m.attempts} attempt(s))")


def _unsafe(c: Any, m: TxnModel, mops: Mops, wrote: list[bool]) -> Mops:
    values: dict[int, Any] = {}
    for k in sorted(m.must_read(mops)):
        raw, _ = c.get(_key(m, k))
        if raw is not None:
            values[k] = m.decode(raw)
    done, written = m.apply(mops, values)
    if written:
        time.sleep(UNSAFE_THINK)
        wrote[0] = True
        for k in sorted(written):
            c.put(_key(m, k), m.encode(values[k]))  # no compare: what was read may be stale
    return done
