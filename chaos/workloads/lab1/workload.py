"""lab1 on a cluster: etcd on every node, the ``orders`` service with its scheduler on every node.

There is no external client: the replicas' schedulers are the workload. The history holds the
nemesis ops and one final read; the events (lock-acquired, write, ...) and the final state carry the
evidence the checkers use.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.cluster import clocks
from chaos.core.capabilities import option_values
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec
from chaos.core.target import Target
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads import solutions
from chaos.workloads.lab1 import checkers, keys, points
from chaos.workloads.lab1.final_state import finished, read_final
from chaos.workloads.lab1.protocol_api import REQUIRED
from chaos.workloads.lab1.report import UnsafeLeaseSection
from chaos.workloads.lab1.service import COMPONENT
from chaos.workloads.systems import egress, etcd, etcd_proxy, etcd_record, write_points
from chaos.workloads.systems.roles import ETCD_ROLES, system_role

SOLUTIONS_DIR = Path(__file__).parent / "solutions"
UNIT = 0.1  # seconds per lab unit: lockAtMostFor 30 units = 3 s
LOCK_AT_MOST = 30
NIGHTS = 4
CRON_LEAD = 3.0  # seconds from deploy to the first night in cron mode
RECORD_START = "/chaos/record-start"  # outside /lab1/: the code under test never reads it
# The lab's -o options (docs/labs/lab1.md's table is made from these), in units of UNIT seconds
OPTIONS: tuple[WorkloadOption, ...] = (
    WorkloadOption(
        "nights",
        int,
        None,
        f"last night to run (0: no end); default: `--tasks`, else {NIGHTS}",
        low=0,
    ),
    WorkloadOption("lock_at_least", float, 2.0, "`lockAtLeastFor`, units", low=0),
    WorkloadOption("lock_at_most", float, float(LOCK_AT_MOST), "`lockAtMostFor`, units", low=0),
    WorkloadOption(
        "cron", float, 0.0, "night length in units: cron mode (0: nights back to back)", low=0
    ),
    WorkloadOption("job", float, 3.0, "units a night's job normally takes", low=0),
    WorkloadOption(
        "renew",
        float,
        0.0,
        "renew the lease through the solution's `extend` once so many units passed since the "
        "grant or the last renewal (0: never)",
        low=0,
    ),
)
# -o option -> the service's variable it sets, always (given, else its declared default: the
# service has no default of its own for them)
OPTION_ENV = {
    "lock_at_least": "CHAOS_LAB1_LOCK_AT_LEAST",
    "lock_at_most": "CHAOS_LAB1_LOCK_AT_MOST",
    "cron": "CHAOS_LAB1_CRON",
    "job": "CHAOS_LAB1_JOB",
    "renew": "CHAOS_LAB1_RENEW",
}


def solution_path(solution: str) -> Path:
    return solutions.resolve(SOLUTIONS_DIR, solution)


class Lab1(write_points.ProxyWritePoints):
    """lab1 as a workload. Capabilities: SolutionMounts, HoldPoints, PauseTarget (the lock
    holder), Gradable, TxnPoints, RoleResolver (``holder``, ``standby`` and the systems' roles),
    FaultAims (``clock`` aims at the standbys), WorkloadOptions (:data:`OPTIONS`)."""

    name = "lab1"
    options = OPTIONS
    # chaos grade: the default matrix, and the shipped solutions graded as control rows
    grade_matrix = Path(__file__).parent / "grade.yaml"
    grade_controls = {
        "reference": "reference",
        "no-fencing": "buggy",
        "check-lease-before-write": "buggy",
        "acquire-without-cas": "buggy",
        "off-by-one-night": "buggy",
        "token-reuse": "buggy",
        "renew-without-check": "buggy",
    }
    # FaultAims: `--nemesis clock` alone moves every standby's clock 4 s ahead of the holder's,
    # past lockAtMostFor, which is what defeats a lease judged on each replica's own clock
    fault_aims: dict[str, str] = {"clock": "skew=4:standby"}
    hold_points = points.HOLD_POINTS
    # TxnPoints: every transaction of these solution functions is a hold point
    txn_functions: dict[str, str] = {
        fn: "orders" for fn in ("acquire", "extend", "release", "write_change")
    }
    txn_roles: dict[str, str] = {"holder": "orders"}
    # WritePoints: writes the nodes' etcd proxies can hold for a trigger (``pause holder before
    # write of orders for 6s``), with no sign to the code under test before the fault
    write_groups: dict[str, tuple[str, ...]] = {
        "lock": (keys.LOCKS_PREFIX,),
        "orders": (keys.ORDERS_PREFIX,),
        "applied": (keys.APPLIED_PREFIX,),
        "night": (keys.NIGHTS_PREFIX,),
    }
    one_task: dict[str, str] = {"nights": "1"}
    rival: str = "lock-acquired"
    # Names: what a fault target and a trigger's ``until`` may name
    roles = (COMPONENT, "holder", "standby", *ETCD_ROLES)
    event_kinds = points.EVENT_KINDS
    default_pause = LOCK_AT_MOST * UNIT + 1.5  # past lockAtMostFor, so another replica takes over

    def preflight(self, spec: TestSpec) -> None:
        solutions.preflight(SOLUTIONS_DIR, spec.solution, REQUIRED, "docs/labs/lab1.md")
        option_values(self, spec)

    def solutions(self) -> list[str]:
        return solutions.builtin(SOLUTIONS_DIR)

    def mounts(self, spec: TestSpec) -> dict[str, str]:
        return solutions.mounts(SOLUTIONS_DIR, spec.solution)

    def nights(self, spec: TestSpec) -> int:
        nights = option_values(self, spec).get("nights", spec.tasks or NIGHTS)
        return int(nights)

    def service_env(self, ctx: RunContext, node: str) -> dict[str, str]:
        sol = solutions.node_path(SOLUTIONS_DIR, ctx.spec.solution)
        return {
            "CHAOS_NODE": node,
            "CHAOS_LIVE": "/chaos",
            "CHAOS_SOLUTION": sol,
            # its own node's proxy only: the proxy's journal is the author of every write
            "CHAOS_ETCD": etcd_proxy.service_endpoint(),
            "CHAOS_LAB1_UNIT": str(UNIT),
            "CHAOS_LAB1_NIGHTS": str(self.nights(ctx.spec)),
            **self.option_env(ctx),
        }

    def option_env(self, ctx: RunContext) -> dict[str, str]:
        """The services' variables the ``-o`` options set, each given or at its declared default
        (see :data:`OPTIONS`; cron mode: chaos.workloads.lab1.service)."""
        opts = option_values(self, ctx.spec)
        out = {var: str(opts[key]) for key, var in OPTION_ENV.items()}
        if float(opts["cron"]) > 0:
            # one epoch for every replica, a little after they all started; the host's offset
            # between the true wall clock and CLOCK_MONOTONIC gives the services the store's clock
            epoch = ctx.state.setdefault("lab1-epoch", time.time() + CRON_LEAD)
            out["CHAOS_LAB1_EPOCH"] = repr(epoch)
            out["CHAOS_LAB1_WALL_BASE"] = repr(clocks.wall_minus_monotonic())
        return out

    def deploy(self, ctx: RunContext) -> None:
        ctx.progress("starting etcd on every node")
        # the services may connect to their own node only (its etcd proxy): nothing else of the
        # run; the chain needs nothing of etcd, so it is installed while etcd starts
        etcd.deploy(
            ctx,
            proxies_ready=False,
            beside=[lambda: egress.install(ctx.cluster)],
            scope=keys.PREFIX,  # the proxies forward the lab's keys only
        )
        c = etcd.client(ctx)
        try:
            # etcd's record of the run starts after this write (outside the lab's prefix): every
            # later write under /lab1/ is replayed at the end (see final_state)
            c.put(RECORD_START, "")
            _, meta = c.get(RECORD_START)
            ctx.state["etcd_from_revision"] = int(meta.mod_revision) + 1
        finally:
            c.close()
        etcd_proxy.wait_listening(ctx.cluster)  # the services' only way to etcd

    def _start_services(self, ctx: RunContext) -> None:
        """The replicas, started by the client's phase, not by the deploy: they run their nights
        from their start, and a trigger's point must be armed before the first one (under load,
        the arming reached the nodes after the nights had begun, and the point never fired)."""
        ctx.progress("starting the orders service on every node")
        ctx.supervisor.start_processes(
            [
                ProcessSpec(
                    node=node,
                    name=COMPONENT,
                    role=COMPONENT,
                    argv=["python3", "-m", "chaos.workloads.lab1.service"],
                    user="nobody",  # the code under test never runs as root
                    env=self.service_env(ctx, node),
                )
                for node in ctx.cluster.nodes
            ]
        )

    def pause_target(self, ctx: RunContext) -> Target | None:
        """The replica that holds the lock: the latest grant not followed by its release."""

        holder = None
        for e in ctx.events.snapshot():
            if e.kind == "lock-acquired":
                holder = e
            elif e.kind in {"lock-released", "job-end"} and holder and e.node == holder.node:
                holder = None
        if holder is None or ctx.cluster.process_state(holder.node, COMPONENT) in (None, "T"):
            return None
        return Target(node=holder.node, process=COMPONENT)

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None:
        """``holder``: the replica that holds the lock now. ``standby``: every other replica, while
        one holds it (a clock ahead there judges the holder's lease expired early); nobody when
        the lock is free."""
        if role == "holder":
            t = self.pause_target(ctx)
            return [t] if t is not None else []
        if role == "standby":
            held = self.pause_target(ctx)
            if held is None:
                return []
            return [Target(node=n, process=COMPONENT) for n in ctx.cluster.nodes if n != held.node]
        return system_role(ctx, role)

    def run_client(self, ctx: RunContext) -> None:
        """Start the replicas (the nemeses' points are armed by now), then wait for their
        schedulers to run every night (or the time limit)."""
        self._start_services(ctx)
        deadline = time.monotonic() + ctx.spec.time_limit
        while time.monotonic() < deadline and not ctx.stop.is_set():
            if self._finished(ctx):
                break
            ctx.stop.wait(0.25)

    def _finished(self, ctx: RunContext) -> bool:
        try:
            return finished(read_final(etcd.endpoints(ctx), timeout=2.0))
        except Exception:
            return False

    def recovered(self, ctx: RunContext) -> bool:
        return self._finished(ctx)

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        ctx.history.record(process=0, type=OpType.INVOKE, f="read-final", value=None)
        try:
            final = read_final(etcd.endpoints(ctx))
        except Exception as e:
            ctx.history.record(process=0, type=OpType.FAIL, f="read-final", value=None,
                               error=f"{type(e).__name__}: {e}")  # fmt: skip
            raise
        ctx.history.record(process=0, type=OpType.OK, f="read-final",
                           value={"nights_done": final.get("nights_done")})  # fmt: skip
        start = ctx.state.get("etcd_from_revision")
        if start is None:
            final["record"] = {"source": "etcd", "error": "the run never reached its first write"}
        else:
            c = etcd.client(ctx, timeout=etcd_record.CLIENT_TIMEOUT)
            try:
                final["record"] = etcd_record.replay(c, keys.PREFIX, int(start))
            finally:
                c.close()
        # after the final read and the record: who wrote what, from the nodes' proxies (every
        # write the record holds passed one; chaos.workloads.lab1.authors)
        final["journal"] = etcd_proxy.collect(ctx)
        return final

    def check(self, run: StoredRun) -> list[CheckResult]:
        return checkers.check(run.history, run.events, run.final or None)

    def report_sections(self) -> list[UnsafeLeaseSection]:
        """This workload's sections of its runs' report pages (chaos.report.contrib)."""
        return [UnsafeLeaseSection()]
