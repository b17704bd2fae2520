"""``etcd-register``: read / write / compare-and-set on independent keys of the real 3-member etcd.

Jepsen's independent-register workload: each key is a register that a bounded number of ops touch
before the workload moves on to a fresh key, so the linearizability checker can check each key on
its own (P-compositionality). Values are ``[key, value]`` pairs, as in Jepsen's ``independent``.

Reads are linearizable (etcd's default quorum read). A read that fails or times out is ``fail``: it
changed nothing. A write or cas that times out is ``info``: it may have been applied.
"""

from __future__ import annotations

import threading
from typing import Any

import etcd3
import etcd3.exceptions

from chaos.checkers.offline import check_history
from chaos.checkers.verdict import CheckResult
from chaos.core.context import RunContext
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads.generic import classify, drive
from chaos.workloads.on_etcd import OnEtcd, final_values
from chaos.workloads.systems import etcd

PREFIX = "/register/"
OPS_PER_KEY = 60
VALUES = 5


class EtcdRegister(OnEtcd):
    name = "etcd-register"

    def run_client(self, ctx: RunContext) -> None:
        rng = ctx.rng_for("workload")
        lock = threading.Lock()
        state = {"key": 0, "used": 0}
        clients = etcd.ProcessClients(ctx)

        def next_op() -> tuple[int, str, Any]:
            with lock:
                if state["used"] >= OPS_PER_KEY:
                    state["key"] += 1
                    state["used"] = 0
                state["used"] += 1
                k = state["key"]
                f = rng.choice(["read", "write", "cas"])
                if f == "read":
                    return k, f, None
                if f == "write":
                    return k, f, rng.randrange(VALUES)
                return k, f, [rng.randrange(VALUES), rng.randrange(VALUES)]

        def step(process: int) -> None:
            k, f, v = next_op()
            node = ctx.cluster.nodes[process % len(ctx.cluster.nodes)]
            ctx.history.record(process=process, type=OpType.INVOKE, f=f, value=[k, v],
                               extra={"node": node})  # fmt: skip
            key = f"{PREFIX}{k}"
            try:
                c = clients.get(process)
                if f == "read":
                    raw, _ = c.get(key)
                    got = None if raw is None else int(raw)
                    ctx.history.record(process=process, type=OpType.OK, f=f, value=[k, got])
                elif f == "write":
                    c.put(key, str(v))
                    ctx.history.record(process=process, type=OpType.OK, f=f, value=[k, v])
                else:
                    old, new = v
                    ok, _ = c.transaction(
                        compare=[c.transactions.value(key) == str(old)],
                        success=[c.transactions.put(key, str(new))],
                        failure=[],
                    )
                    ctx.history.record(process=process, type=OpType.OK if ok else OpType.FAIL,
                                       f=f, value=[k, v])  # fmt: skip
            except Exception as e:
                # a read changed nothing; a write or cas may have been applied before the timeout
                t = OpType.FAIL if f == "read" else OpType.INFO
                if isinstance(e, etcd3.exceptions.ConnectionFailedError) and f != "read":
                    t = OpType.INFO  # the request may have left before the connection broke
                ctx.history.record(process=process, type=t, f=f, value=[k, v],
                                   error=classify(e))  # fmt: skip
                clients.drop(process)

        with clients:
            drive(ctx, step, default_rate=40.0)

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        return final_values(ctx, "registers", PREFIX, int)

    def check(self, run: StoredRun) -> list[CheckResult]:
        client_ops = [op for op in run.history if not op.is_nemesis]
        # values are [key, value] pairs (Jepsen's independent): each key its own register
        return check_history(client_ops, "cas-register", time_limit=60.0, independent=True)
