"""lab3 on a cluster: etcd on every node, one JetStream broker, api + relay + worker per node."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.core.capabilities import OptionValues, option_values
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.spec import TestSpec
from chaos.core.supervisor import ProcessSpec
from chaos.core.target import Target
from chaos.histories.limits import loads_bounded
from chaos.histories.ops import OpType
from chaos.histories.store import StoredRun
from chaos.workloads import solutions
from chaos.workloads.lab3 import broker, checkers, keys, lab_report, lost_answer, points
from chaos.workloads.lab3.report import LabReportSection
from chaos.workloads.systems import (
    egress,
    etcd,
    etcd_proxy,
    etcd_record,
    nats,
    nats_proxy,
    record_values,
    write_points,
)
from chaos.workloads.systems.nats_auth import BrokerAuth
from chaos.workloads.systems.roles import ETCD_ROLES, NATS_ROLES, system_role

API_PORT = 8080
STANDARD_SET = [("t1", 2), ("t2", 3), ("t3", 5)]
# The lab's -o options (docs/labs/lab3.md's table is made from these)
OPTIONS: tuple[WorkloadOption, ...] = (
    WorkloadOption(
        "set_size",
        int,
        len(STANDARD_SET),
        "how many tasks of the standard set to create (without --tasks or --rate)",
        low=1,
        high=len(STANDARD_SET),
    ),
    nats.ACK_WAIT,
    WorkloadOption(
        "work_seconds",
        float,
        0.5,
        "seconds a worker computes a delivery before it commits",
        low=0,
    ),
)
SOLUTIONS_DIR = Path(__file__).parent / "solutions"
ROLES = ("api", "relay", "worker")
# beyond work_seconds, how long a worker may go unseen before its commit lands (see rest_grace)
REST_MARGIN = 3.0


def _all_status(c: Any, prefix: str, status: str) -> bool:
    """Whether every record under ``prefix`` has ``status`` (a value that is not a JSON object
    with it is not done)."""
    for value, _ in c.get_prefix(prefix):
        record = record_values.decode(value)
        if not isinstance(record, dict) or record.get("status") != status:
            return False
    return True


def _idle_consumer(ctx: RunContext) -> dict[str, Any] | None:
    """The broker's consumer counts when it holds no message undelivered or unacknowledged;
    None while it does, or when the broker does not answer."""
    try:
        consumer: dict[str, Any] = broker.read_broker(nats.url(ctx))["consumer"]
    except Exception:
        return None
    return None if consumer["num_ack_pending"] or consumer["num_pending"] else consumer


def solution_path(solution: str) -> Path:
    return solutions.resolve(SOLUTIONS_DIR, solution)


class Lab3(write_points.ProxyWritePoints):
    """lab3 as a workload. Capabilities: SolutionMounts, FaultPoints (the seed's three scenarios),
    HostFaultPoints (txn-error-*, fired by the nodes' etcd proxies), HoldPoints, PauseTarget (the
    busy worker), RoleResolver (the systems' roles), Scenarios, Gradable, WorkloadOptions
    (:data:`OPTIONS`), Takeover (AckWait: a redelivery takes a stalled worker's task over)."""

    name = "lab3"
    options = OPTIONS
    # chaos grade: the default matrix, and the shipped solutions graded as control rows
    grade_matrix = Path(__file__).parent / "grade.yaml"
    grade_controls = {
        "reference": "reference",
        "check-then-act": "buggy",
        "ack-before-commit": "buggy",
        "second-txn-dedup": "buggy",
        "non-idempotent-create": "buggy",
        "outbox-second-txn": "buggy",
        "lost-update": "buggy",
        "swallow-errors": "buggy",
        "ack-on-redelivery": "buggy",
    }
    fault_points = points.FAULT_POINTS
    host_points = points.HOST_POINTS
    hold_points = points.HOLD_POINTS
    # TxnPoints: every transaction of these solution functions is a hold point
    txn_functions: dict[str, str] = {"create": "api", "complete": "worker"}
    txn_roles: dict[str, str] = {}
    # WritePoints: writes the nodes' etcd proxies can hold for a trigger (``kill worker after
    # write of counter``), with no sign to the code under test before the fault
    write_groups: dict[str, tuple[str, ...]] = {
        "counter": (keys.COUNTER,),
        "task": (keys.TASKS_PREFIX,),
        "outbox": (keys.OUTBOX_PREFIX,),
        "dedup": (keys.DEDUP_PREFIX,),
        "result": (keys.RESULTS_PREFIX,),
    }
    # and the broker steps the nodes' NATS proxies can hold (``kill worker after ack of tasks``)
    broker_groups = points.BROKER_GROUPS
    broker_components = points.BROKER_COMPONENTS
    # a read point (hold-after-check's ``read of counter``) fires only on a read made while the
    # node's worker handles a delivery: a read a thread of the solution sends between deliveries
    # is no check, and took the one firing (issue 29)
    reads_during = "tasks"
    # one unit of work: a run where a second fault lands in the first one's redelivery; the
    # second kill must be armed again before the redelivery reaches the point, and the first
    # kill's restart takes up to a second, so AckWait (2 s) must outlast it
    one_task: dict[str, str] = {"set_size": "1", "ack_wait": "2"}
    rival: str = "commit"
    scenarios = points.SCENARIOS
    # Names: what a fault target and a trigger's ``until`` may name
    roles = (*ROLES, *ETCD_ROLES, *NATS_ROLES)
    event_kinds = points.EVENT_KINDS

    def pause_target(self, ctx: RunContext) -> Target | None:
        return busy_worker(ctx)

    def takeover_seconds(self, values: OptionValues) -> float:
        return nats.ack_wait(values)

    def delivery_window(self, ctx: RunContext) -> float | None:
        # AckWait: the broker takes an unended delivery back then, so holding one (or asking
        # for more time with +WPI) does not keep the gate open
        return nats.ack_wait(option_values(self, ctx.spec))

    # HostFaultPoints: txn-error-* are fired by the nodes' etcd proxies, confirmed by them;
    # lost-create-response by the orchestrator's own client (chaos.workloads.lab3.lost_answer)
    def arm_host_point(self, ctx: RunContext, point: str) -> str:
        if point == points.LOST_CREATE:
            return lost_answer.of(ctx).arm()
        return etcd_proxy.arm_txn_error(ctx, list(points.HOST_POINTS[point]))

    def host_point_fired(self, ctx: RunContext, point: str, gen: str) -> list[dict[str, Any]]:
        if point == points.LOST_CREATE:
            return lost_answer.of(ctx).fired(gen)
        return etcd_proxy.txn_error_fired(ctx, gen)

    def disarm_host_point(self, ctx: RunContext, point: str) -> None:
        if point == points.LOST_CREATE:
            lost_answer.of(ctx).disarm()
            return
        etcd_proxy.disarm_txn_error(ctx)

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None:
        return system_role(ctx, role)

    def observe(self, ctx: RunContext) -> dict[str, Any]:
        """The state a fault point is reached in, read by the orchestrator itself the moment the
        point is claimed, before the fault acts: etcd's outbox and which tasks have their
        commit in etcd, and the broker's stream and consumer (chaos.workloads.lab3.confirm judges
        from it whether the scenario's precondition held)."""
        # one try (the claimer waits for it), so a longer bound than a poll's: a read that failed
        # here leaves the scenario unknown
        c = etcd.client(ctx, timeout=5.0)
        try:
            # one range read: every key of the lab at one revision, a consistent cut (reads key
            # by key would mix moments while the run goes on). etcd first, the broker after: a
            # commit seen here and a delivery still unACKed there were both true at once.
            revision, kvs = _snapshot(c, keys.PREFIX)
        finally:
            c.close()
        entries: list[dict[str, Any]] = []
        dedup: set[str] = set()
        committed: set[str] = set()
        for key, value in kvs:
            name = key.rsplit("/", 1)[-1]
            if key.startswith(keys.DEDUP_PREFIX):
                dedup.add(name)
            elif key.startswith(keys.RESULTS_PREFIX):
                committed.add(name)
            elif key.startswith(keys.OUTBOX_PREFIX) or key.startswith(keys.TASKS_PREFIX):
                v = record_values.decode(value)
                if not isinstance(v, dict):
                    continue
                if key.startswith(keys.OUTBOX_PREFIX):
                    entries.append(v)
                elif v.get("status") == "completed":
                    committed.add(str(v.get("task_id")))
        # a task's commit is in etcd once its dedup record, its result or its completed status is
        committed |= {str(e.get("task_id")) for e in entries if str(e.get("event_id")) in dedup}
        b = broker.snapshot(nats.url(ctx))
        return {
            "etcd_revision": revision,
            "outbox_pending": sum(1 for e in entries if e.get("status") == "pending"),
            "outbox_published": sum(1 for e in entries if e.get("status") == "published"),
            "pending_event_ids": sorted(
                str(e.get("event_id")) for e in entries if e.get("status") == "pending"
            ),
            "committed_tasks": sorted(committed),
            "stream_messages": b["stream"]["messages"],
            "stream": b["stream"],
            "consumer": b["consumer"],
            "messages": {str(k): v for k, v in b["messages"].items()},
        }

    def preflight(self, spec: TestSpec) -> None:
        solutions.preflight(
            SOLUTIONS_DIR, spec.solution, ["create", "complete"], "docs/labs/lab3.md"
        )
        option_values(self, spec)

    # ------------------------------------------------------------ deploy

    def solutions(self) -> list[str]:
        return solutions.builtin(SOLUTIONS_DIR)

    def mounts(self, spec: TestSpec) -> dict[str, str]:
        return solutions.mounts(SOLUTIONS_DIR, spec.solution)

    def service_env(self, ctx: RunContext, node: str) -> dict[str, str]:
        sol = solutions.node_path(SOLUTIONS_DIR, ctx.spec.solution)
        return {
            "CHAOS_NODE": node,
            "CHAOS_LIVE": "/chaos",
            "CHAOS_SOLUTION": sol,
            # its own node's proxy and nothing else: the proxy's journal names this node as the
            # author of every write that passes (chaos.workloads.systems.etcd_proxy)
            "CHAOS_ETCD": etcd_proxy.service_endpoint(),
            # the services' own broker user (the lab's subject and consumer, nothing else:
            # chaos.workloads.systems.nats_auth), through their node's NATS proxy only
            "CHAOS_NATS": nats_proxy.service_url(ctx),
            "CHAOS_API_PORT": str(API_PORT),
            "CHAOS_WORK_SECONDS": str(option_values(self, ctx.spec)["work_seconds"]),
            "CHAOS_PUBLISH_ACK_TIMEOUT": "1.0",
        }

    def deploy(self, ctx: RunContext) -> None:
        ctx.progress("starting etcd on every node and the JetStream broker")
        # side by side: none needs another to start; the services may connect to their own node
        # and the broker, nothing else of the run
        users = BrokerAuth(stream=keys.STREAM, consumer=keys.CONSUMER, subject=keys.SUBJECT)
        etcd.deploy(
            ctx,
            proxies_ready=False,
            beside=[
                lambda: nats.deploy(ctx, users=users),
                # the services reach the broker through their node's proxy (loopback) only
                lambda: egress.install(ctx.cluster, ()),
                lambda: nats_proxy.deploy(ctx),
            ],
            scope=keys.PREFIX,  # the proxies forward the lab's keys only
        )
        # chaos makes the stream and the consumer as its own user (the services' may not), and
        # reads their configuration back at the end (broker-config)
        ctx.state[BROKER_CONFIG] = broker.ensure_stream(
            nats.url(ctx), nats.ack_wait(option_values(self, ctx.spec))
        )
        c = etcd.client(ctx)
        try:
            c.put(keys.COUNTER, "0")
            _, meta = c.get(keys.COUNTER)
            # etcd's record of the run starts here: every later write of the lab's keys is replayed
            # from this revision at the end (see final_state)
            ctx.state["etcd_from_revision"] = int(meta.mod_revision)
        finally:
            c.close()
        etcd_proxy.wait_listening(ctx.cluster)  # the services' only way to etcd
        nats_proxy.wait_listening(ctx.cluster)  # and to the broker
        ctx.progress("starting api, relay and worker on every node")
        envs = {node: self.service_env(ctx, node) for node in ctx.cluster.nodes}
        ctx.supervisor.start_processes(
            [
                ProcessSpec(
                    node=node,
                    name=role,
                    role=role,
                    argv=["python3", "-m", "chaos.workloads.lab3.service", role],
                    user="nobody",  # the code under test never runs as root
                    env=envs[node],
                )
                for node in ctx.cluster.nodes
                for role in ROLES
            ]
        )
        self._wait_api(ctx)

    def _wait_api(self, ctx: RunContext, wait: float = 20.0) -> None:
        deadline = time.monotonic() + wait
        for node in ctx.cluster.nodes:
            while True:
                try:
                    with socket.create_connection((ctx.cluster.address(node), API_PORT), 0.5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"lab3 api on {node} did not start; see logs/{node}/api.log"
                        ) from None
                    time.sleep(0.05)

    # ------------------------------------------------------------ client

    def tasks(self, ctx: RunContext) -> list[tuple[str, int]]:
        if not ctx.spec.fixed_load:
            size = option_values(self, ctx.spec)["set_size"]
            return list(STANDARD_SET[: int(size)])
        rng = ctx.rng_for("workload")
        # rate mode: as many as the rate can ask for in the time limit (a list of 10**9 would
        # take minutes and gigabytes to build before the first request)
        n = ctx.spec.tasks if ctx.spec.tasks is not None else int(rate_cap(ctx.spec)) + 1
        return [(f"t{i}", rng.randint(1, 9)) for i in range(1, n + 1)]

    def run_client(self, ctx: RunContext) -> None:
        todo = self.tasks(ctx)
        lock = threading.Lock()
        it = iter(todo)
        interval = 1.0 / ctx.spec.rate if ctx.spec.rate else 0.0
        deadline = time.monotonic() + ctx.spec.time_limit if ctx.spec.rate else float("inf")
        next_at = [time.monotonic()]

        def next_task() -> tuple[str, int] | None:
            with lock:
                if ctx.stop.is_set() or time.monotonic() >= deadline:
                    return None
                item = next(it, None)
                if item is None or not interval:
                    return item
                wait = next_at[0] - time.monotonic()
                next_at[0] = max(next_at[0], time.monotonic()) + interval
            if wait > 0:
                time.sleep(wait)
            return item

        def worker(process: int) -> None:
            node = ctx.cluster.nodes[process % len(ctx.cluster.nodes)]
            while (item := next_task()) is not None:
                self._create(ctx, process, node, *item)

        threads = [
            threading.Thread(target=worker, args=(p,), name=f"client-{p}", daemon=True)
            for p in range(max(1, min(ctx.spec.concurrency, len(todo))))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _create(self, ctx: RunContext, process: int, node: str, task_id: str, amount: int) -> None:
        """One create op, Jepsen's way: an attempt that may have committed (a timeout, a 5xx, a
        lost answer) is retried with the same task_id on the next node — the lab promises that
        a retry returns the first event id — and the op is ``ok`` once an attempt is answered,
        ``fail`` only when no attempt can have committed, ``info`` otherwise."""
        value = {"task_id": task_id, "amount": amount}
        ctx.history.record(
            process=process, type=OpType.INVOKE, f="create", value=value, extra={"node": node}
        )
        nodes = list(ctx.cluster.nodes)
        first = nodes.index(node) if node in nodes else 0
        tried: list[dict[str, Any]] = []
        for attempt in range(CREATE_ATTEMPTS):
            at = nodes[(first + attempt) % len(nodes)]
            kind, data = _post_task(ctx.cluster.address(at), value)
            extra: dict[str, Any] = {"node": at}
            if tried:
                extra["retried"] = tried  # the earlier attempts: where, and what they got
            if kind == "ok" and lost_answer.of(ctx).take(ctx, at, task_id):
                kind, data = "indeterminate", lost_answer.ERROR
            if kind == "ok":
                ctx.history.record(
                    process=process, type=OpType.OK, f="create", value=data, extra=extra
                )
                return
            if kind == "rejected":
                ctx.history.record(
                    process=process,
                    type=OpType.FAIL,
                    f="create",
                    value=value,
                    error=str(data),
                    extra=extra,
                )
                return
            tried.append({"node": at, "outcome": kind, "error": str(data)})
            if ctx.stop.is_set():
                break
            time.sleep(CREATE_RETRY_PAUSE)
        # no attempt was answered: it may have committed unless every one was refused
        maybe = any(t["outcome"] == "indeterminate" for t in tried)
        ctx.history.record(
            process=process,
            type=OpType.INFO if maybe else OpType.FAIL,
            f="create",
            value=value,
            error="; ".join(f"{t['node']}: {t['error']}" for t in tried),
            extra={"node": tried[-1]["node"], "retried": tried[:-1]} if tried else {},
        )

    # ------------------------------------------------------------ recovery and final state

    def recovered(self, ctx: RunContext) -> bool:
        c = etcd.client(ctx, timeout=2.0)
        try:
            if not (
                _all_status(c, keys.TASKS_PREFIX, "completed")
                and _all_status(c, keys.OUTBOX_PREFIX, "published")
            ):
                return False
        except Exception:
            return False
        finally:
            c.close()
        return _idle_consumer(ctx) is not None

    # Quiescence: a task whose message is gone (acknowledged before its work, or never
    # published) is never completed; its run reads the final state once nothing moves
    def at_rest(self, ctx: RunContext) -> object | None:
        """None while the broker holds a message undelivered or unacknowledged, or the outbox an
        entry not marked published; else the store's raft index and the consumer's counts."""
        c = etcd.client(ctx, timeout=2.0)
        try:
            if not _all_status(c, keys.OUTBOX_PREFIX, "published"):
                return None
            index = int(c.status().raft_index)
        except Exception:
            return None
        finally:
            c.close()
        consumer = _idle_consumer(ctx)
        if consumer is None:
            return None
        return (index, consumer["delivered_consumer_seq"], consumer["ack_floor_stream_seq"])

    def rest_grace(self, values: OptionValues) -> float:
        # a worker that acknowledged first may still be computing, then commit: its work
        # (work_seconds) and the slowest commit seen on a loaded machine
        return float(values["work_seconds"]) + REST_MARGIN

    def final_state(self, ctx: RunContext) -> dict[str, Any]:
        c = etcd.client(ctx, timeout=3.0)
        try:
            counter, _ = c.get(keys.COUNTER)
            # by key, read the one way the record's replay reads them: a value the code under test
            # wrote cannot name another task, nor stop the reads (exactly-once names the write)
            tasks: dict[str, Any] = {}
            for v, meta in c.get_prefix(keys.TASKS_PREFIX):
                task = record_values.decode(v)
                tasks[meta.key.decode()[len(keys.TASKS_PREFIX) :]] = (
                    task.get("status") if isinstance(task, dict) else None
                )
            results = {}
            for v, meta in c.get_prefix(keys.RESULTS_PREFIX):
                results[meta.key.decode()[len(keys.RESULTS_PREFIX) :]] = record_values.decode(v)
            dedup = sorted(
                meta.key.decode().rsplit("/", 1)[-1] for _, meta in c.get_prefix(keys.DEDUP_PREFIX)
            )
            pending: list[dict[str, Any]] = []
            published: list[dict[str, Any]] = []
            for v, _ in c.get_prefix(keys.OUTBOX_PREFIX):
                entry = record_values.decode(v)
                if not isinstance(entry, dict):
                    continue
                (published if entry.get("status") == "published" else pending).append(entry)
        finally:
            c.close()
        start = ctx.state.get("etcd_from_revision")
        if start is None:
            record = {"source": "etcd", "error": "the run never reached its first write"}
        else:
            c = etcd.client(ctx, timeout=etcd_record.CLIENT_TIMEOUT)
            try:
                record = etcd_record.replay(c, keys.PREFIX, int(start))
            finally:
                c.close()
        # the one reading of the counter the replay of the record uses too: a value one of them
        # would count and the other refuse is refused by both, and named
        value = record_values.decode(counter)
        # after the final reads: every write the services made has passed their proxies
        journal = etcd_proxy.collect(ctx)
        state: dict[str, Any] = {
            "counter": record_values.as_int(value),
            "tasks": tasks,
            "results": results,
            "dedup": dedup,
            "outbox": {"pending": pending, "published": published},
            "record": record,
            "journal": journal,
            # the NATS proxies' word on what they held or refused (broker points)
            "broker_journal": nats_proxy.collect(ctx),
        }
        if counter is not None and state["counter"] is None:
            state["counter_refused"] = value
        state.update(_broker_state(nats.url(ctx)))
        state[BROKER_CONFIG] = _broker_config(ctx)
        return state

    # ------------------------------------------------------------ checks

    def check(self, run: StoredRun) -> list[CheckResult]:
        return checkers.check(run)

    def lab_report(self, run: StoredRun, results: list[CheckResult]) -> dict[str, Any]:
        return lab_report.scenario_report(run, results)

    def combined_report(self, reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return lab_report.combined_report(reports)

    def report_sections(self) -> list[LabReportSection]:
        """This workload's sections of its runs' report pages (chaos.report.contrib)."""
        return [LabReportSection()]


CREATE_ATTEMPTS = 4
CREATE_RETRY_PAUSE = 0.2
BROKER_CONFIG = "broker_config"  # in the context state (at the start) and the final state


def _post_task(address: str, value: dict[str, Any]) -> tuple[str, Any]:
    """One POST /tasks: ``("ok", body)``, ``("rejected", error)`` for a 400 (nothing committed),
    ``("refused", error)`` when no connection was made, ``("indeterminate", error)`` otherwise
    (the transaction may have committed before the error or the lost answer)."""
    conn = http.client.HTTPConnection(address, API_PORT, timeout=3.0)
    try:
        conn.request("POST", "/tasks", json.dumps(value), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        # the api runs the code under test: its answer is read bounded (TooDeep is a ValueError)
        data = loads_bounded(resp.read() or b"{}")
        if resp.status == 200 and isinstance(data, dict):
            return "ok", data
        error = data.get("error") if isinstance(data, dict) else data
        if resp.status == 400:
            return "rejected", error
        return "indeterminate", f"HTTP {resp.status}: {error}"
    except ConnectionRefusedError as e:
        return "refused", f"connection refused: {e}"
    except (TimeoutError, OSError, http.client.HTTPException, ValueError) as e:
        return "indeterminate", f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    finally:
        conn.close()


def _snapshot(c: Any, prefix: str) -> tuple[int | None, list[tuple[str, bytes]]]:
    """Every key under ``prefix`` with its value, from one range read, and the revision it was
    read at (the range response's header)."""
    kvs: list[tuple[str, bytes]] = []
    revision: int | None = None
    for value, meta in c.get_prefix(prefix):
        kvs.append((meta.key.decode(), value))
        revision = int(meta.response_header.revision)
    return revision, kvs


def rate_cap(spec: TestSpec) -> float:
    return (spec.rate or 0.0) * spec.time_limit


def busy_worker(ctx: RunContext) -> Target | None:
    """The worker that has been computing longest on a delivery it has not committed or ACKed."""

    last: dict[tuple[str, int | None], Any] = {}
    for e in ctx.events.snapshot():
        if e.component == "worker" and e.kind in {
            "delivery",
            "compute",
            "commit",
            "suppressed",
            "ack",
            "crash",
            "protocol-error",
        }:
            last[(e.node, e.pid)] = e
    busy = sorted((e for e in last.values() if e.kind == "compute"), key=lambda e: e.time)
    for e in busy:
        if ctx.cluster.pid(e.node, "worker") == e.pid and (
            ctx.cluster.process_state(e.node, "worker") != "T"
        ):
            return Target(node=e.node, process="worker")
    return None


# the broker's own counts, tried again after a failure (a connect that a loaded machine left past
# its 2 s): without them scenario-fired cannot tell some scenarios, and says unknown
BROKER_READS = 3
BROKER_READ_PAUSE = 1.0


def _broker_state(url: str) -> dict[str, Any]:
    """The broker's stream and consumer, or ``broker_error`` after the last failed try."""
    for attempt in range(1, BROKER_READS + 1):
        try:
            # the messages too: which event each of the last ones carries (lost-publish-ack's
            # copies, chaos.workloads.lab3.confirm.republished)
            return dict(broker.read_broker(url, broker.MESSAGE_WINDOW))
        except Exception as e:
            if attempt == BROKER_READS:
                return {"broker_error": f"{type(e).__name__}: {e}"}
            time.sleep(BROKER_READ_PAUSE)
    raise AssertionError("unreachable")


def _broker_config(ctx: RunContext) -> dict[str, Any]:
    """The broker's configuration when chaos made it and now (``broker-config`` compares)."""
    out: dict[str, Any] = {"created": ctx.state.get(BROKER_CONFIG)}
    for attempt in range(1, BROKER_READS + 1):
        try:
            out["final"] = broker.read_config(nats.url(ctx))
            return out
        except Exception as e:
            if attempt == BROKER_READS:
                out["error"] = f"{type(e).__name__}: {e}"
            else:
                time.sleep(BROKER_READ_PAUSE)
    return out
