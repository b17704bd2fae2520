"""``etcd-append``: multi-key list-append transactions on the real 3-member etcd (Elle's workload).

Each key holds a JSON list; a transaction is 1-4 micro-ops over a small pool of active keys,
each a read of a key's whole list or an append of a unique element. A key is retired after
:data:`MAX_APPENDS` appends, so that lists stay short and reads cheap, as Jepsen's generator does.
The history's ops are ``f: "txn"`` with ``[f, key, value]`` micro-ops (docs/history-format.md),
checked by :mod:`chaos.checkers.elle` under ``-o consistency=...`` (default strict-serializable).

Two clients (``-o client=safe|unsafe``):

- ``safe`` (the default): one etcd transaction reads every key the transaction touches at one
  revision; the appends are then committed by a second etcd transaction that compares each
  touched key's mod revision with what was read — if another client wrote one meanwhile, nothing
  is written and the whole transaction starts again (up to :data:`RETRIES` times, then ``fail``).
  Every committed transaction thus took effect at its commit, between invocation and completion:
  strict serializable.
- ``unsafe``: read-modify-write without compares: each key is read on its own, and the new lists
  are written back blindly — two clients that read the same list both write it, one's append is
  lost (a lost update; with other keys, G2 and G-single cycles).

A transaction whose read fails is ``fail`` (nothing was written); one whose write times out or
loses its connection is ``info`` (it may have been applied).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from chaos.checkers.elle import DEFAULT_CONSISTENCY, NAMES, check_transactions, transactions
from chaos.checkers.elle.loading import raw_ops
from chaos.checkers.verdict import CheckResult
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption, parse
from chaos.core.spec import TestSpec
from chaos.core.target import Target
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads.generic import classify, drive
from chaos.workloads.systems import etcd
from chaos.workloads.systems.roles import ETCD_ROLES, system_role

PREFIX = "/append/"
ACTIVE_KEYS = 3
MAX_APPENDS = 24
RETRIES = 20
# seconds between the unsafe client's read and its write: the work a client does
UNSAFE_THINK = 0.05
# The -o options of a transactional etcd workload, shared: another such workload imports them (or
# one of them, with its own help through dataclasses.replace) rather than declaring them again
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


class _Aborted(Exception):
    """The safe client's compare failed every time: nothing was written."""


class EtcdAppend:
    name = "etcd-append"
    options = OPTIONS
    # Names: what a fault target may name (etcd's members report no events)
    roles = ETCD_ROLES
    event_kinds: tuple[str, ...] = ()

    def preflight(self, spec: TestSpec) -> None:
        if spec.concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        parse(self.name, OPTIONS, spec.options)

    def deploy(self, ctx: RunContext) -> None:
        ctx.progress("starting etcd on every node")
        etcd.deploy(ctx)

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None:
        return system_role(ctx, role)

    def pause_target(self, ctx: RunContext) -> Target | None:
        node = ctx.rng_for("pause-target").choice(ctx.cluster.nodes)
        return Target(node=node, process="etcd")

    def run_client(self, ctx: RunContext) -> None:
        rng = ctx.rng_for("workload")
        unsafe = parse(self.name, OPTIONS, ctx.spec.options)["client"] == "unsafe"
        lock = threading.Lock()
        state = {"element": 0, "next_key": ACTIVE_KEYS}
        active = list(range(ACTIVE_KEYS))
        appends = dict.fromkeys(active, 0)
        clients = etcd.ProcessClients(ctx)

        def next_txn() -> list[list[Any]]:
            with lock:
                mops: list[list[Any]] = []
                for _ in range(rng.randint(1, 4)):
                    k = rng.choice(active)
                    if rng.random() < 0.5:
                        mops.append(["r", k, None])
                        continue
                    state["element"] += 1
                    mops.append(["append", k, state["element"]])
                    appends[k] = appends.get(k, 0) + 1
                    if appends[k] >= MAX_APPENDS:
                        active[active.index(k)] = state["next_key"]
                        state["next_key"] += 1
                return mops

        def step(process: int) -> None:
            mops = next_txn()
            node = ctx.cluster.nodes[process % len(ctx.cluster.nodes)]
            ctx.history.record(process=process, type=OpType.INVOKE, f="txn", value=mops,
                               extra={"node": node})  # fmt: skip
            wrote = [False]
            try:
                c = clients.get(process)
                done = _unsafe(c, mops, wrote) if unsafe else _safe(c, mops, wrote)
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

        try:
            drive(ctx, step, default_rate=40.0)
        finally:
            clients.close()

    def recovered(self, ctx: RunContext) -> bool:
        return True

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        c = etcd.client(ctx)
        try:
            return {
                "lists": {
                    meta.key.decode().removeprefix(PREFIX): json.loads(v)
                    for v, meta in c.get_prefix(PREFIX)
                },
                "leader": etcd.leader(ctx),
            }
        finally:
            c.close()

    def check(self, run: StoredRun) -> list[CheckResult]:
        consistency = str(run.spec.get("options", {}).get("consistency", CONSISTENCY.default))
        txns, skipped = transactions(raw_ops(run.history))
        return [
            check_transactions(txns, "list-append", consistency, time_limit=60.0, skipped=skipped)
        ]


def _key(k: int) -> str:
    return f"{PREFIX}{k}"


def _apply(mops: list[list[Any]], lists: dict[int, list[int]]) -> tuple[list[list[Any]], set[int]]:
    """Run the micro-ops over ``lists`` (changed in place): the completed micro-ops and the keys
    appended to."""
    done: list[list[Any]] = []
    written: set[int] = set()
    for f, k, v in mops:
        if f == "r":
            done.append(["r", k, list(lists.get(k, []))])
        else:
            lists.setdefault(k, []).append(v)
            written.add(k)
            done.append([f, k, v])
    return done, written


def _safe(c: Any, mops: list[list[Any]], wrote: list[bool]) -> list[list[Any]]:
    keys = sorted({k for _, k, _ in mops})
    for _ in range(RETRIES):
        _, got = c.transaction(compare=[], success=[c.transactions.get(_key(k)) for k in keys],
                               failure=[])  # fmt: skip
        lists: dict[int, list[int]] = {}
        revs: dict[int, int] = {}
        for k, kvs in zip(keys, got, strict=True):
            if kvs:
                value, meta = kvs[0]
                lists[k], revs[k] = json.loads(value), int(meta.mod_revision)
            else:
                revs[k] = 0
        done, written = _apply(mops, lists)
        if not written:
            return done  # one read of every key at one revision: nothing to commit
        wrote[0] = True
        ok, _ = c.transaction(
            compare=[c.transactions.mod(_key(k)) == revs[k] for k in keys],
            success=[c.transactions.put(_key(k), json.dumps(lists[k])) for k in sorted(written)],
            failure=[],
        )
        if ok:
            return done
        wrote[0] = False  # the compare failed: this attempt wrote nothing
    raise _Aborted(f"another client changed a key {RETRIES} times in a row")


def _unsafe(c: Any, mops: list[list[Any]], wrote: list[bool]) -> list[list[Any]]:
    lists: dict[int, list[int]] = {}
    for k in sorted({k for _, k, _ in mops}):
        raw, _ = c.get(_key(k))
        if raw is not None:
            lists[k] = json.loads(raw)
    done, written = _apply(mops, lists)
    if written:
        time.sleep(UNSAFE_THINK)
        wrote[0] = True
        for k in sorted(written):
            c.put(_key(k), json.dumps(lists[k]))  # no compare: what was read may be stale
    return done
