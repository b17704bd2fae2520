"""Runs on Dask: one run is one task, on a local cluster or on an existing scheduler's workers.

Each task asks for one unit of the worker resource ``runs``: a worker started with
``dask worker ADDRESS --resources runs=N`` takes at most N runs at once, however many threads it
has (a run is a cluster of containers, not a CPU-bound function). A task whose worker dies is
rescheduled elsewhere by the scheduler; one that raises RunEnvironmentError is retried
(``retries``). Results come back as they finish, in any order.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from chaos.grade.task import Finished, RunJob, run_one

RESOURCE = "runs"
# a run's containers (etcd, NATS, three services per node) use about this much memory
RUN_MEMORY = 1.5 * 2**30


# runs at once per core: a run mostly waits (bring-up, its fault's hold, recovery). On 2 cores,
# 4 at once graded lab3's whole matrix at 650-799 runs/hour, and the power tables at 4 at once
# (10 seeds, both labs, under other sessions' load) kept every catch and raised no false alarm
# (docs/benchmarks.md, "Grading")
RUNS_PER_CORE = 2


def default_parallel() -> int:
    """Concurrent runs on this machine: two a core (measured on 2 cores), ~1.5 GB each."""
    cores = os.cpu_count() or 1
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        mem = int(RUN_MEMORY)
    return max(1, min(RUNS_PER_CORE * cores, int(mem // RUN_MEMORY)))


@contextlib.contextmanager
def connect(scheduler: str | None, parallel: int, security: Any = None) -> Iterator[Any]:
    """A Dask client: to ``scheduler`` (over TLS with ``security``, a
    ``distributed.security.Security``), or to a local cluster of ``parallel`` run slots.

    The local cluster is one in-process worker with ``parallel`` threads: each task only waits on
    its ``chaos run`` subprocess, so worker processes would cost memory and buy nothing, and an
    in-process worker lets Ctrl-C reach its runs (task.stop_all). It talks in-process; its only
    sockets are the scheduler's and the worker's HTTP servers (the dashboard), both on 127.0.0.1:
    Dask runs whatever reaches it, and nothing but this machine's own users may."""
    from distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler, timeout="20s", security=security)
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=parallel,
        processes=False,
        resources={RESOURCE: parallel},
        # a free port (never clash with another grade's), on loopback only
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
    )
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def has_run_slots(client: Any) -> bool:
    """Whether any worker declares the ``runs`` resource (else tasks asking for it would wait
    forever)."""
    workers = client.scheduler_info().get("workers", {})
    return any(RESOURCE in (w.get("resources") or {}) for w in workers.values())


def run_all(
    client: Any,
    jobs: Sequence[RunJob],
    on_done: Callable[[RunJob, Finished | BaseException], None],
    *,
    retries: int = 2,
) -> None:
    """Submit every job and call ``on_done`` with its result or its final exception, in the order
    they finish. Futures still pending when this returns by an exception are cancelled."""
    from distributed import as_completed

    resources = {RESOURCE: 1} if has_run_slots(client) else None
    by_future = {}
    for i, job in enumerate(jobs):
        f = client.submit(
            run_one,
            job,
            key=f"chaos-run-{job.key}-{job.seed}",
            retries=retries,
            resources=resources,
            # in the order planned (Dask would otherwise favour the newest submissions)
            priority=len(jobs) - i,
            pure=False,
        )
        by_future[f] = job
    try:
        for f in as_completed(list(by_future)):
            job = by_future.pop(f)
            if f.status == "error":
                on_done(job, f.exception())
            else:
                on_done(job, f.result())
    finally:
        if by_future:
            client.cancel(list(by_future))
