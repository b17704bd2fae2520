"""One run from spec to verdict.

Order of things, and why: the run folder and the history exist before anything is created, so an
interrupted run always leaves a checkable record. Every resource is registered on an ExitStack
the moment it exists, so heal and teardown run whatever happens (an exception, SIGINT, SIGTERM).
Checkers run after teardown, on the stored files only: a stored run is re-checked the same way.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checkers.completeness import check_stored_run
from chaos.checkers.offline import write_history_edn
from chaos.checkers.results import write_results
from chaos.checkers.verdict import CheckResult, Verdict, combine
from chaos.cluster.base import Backend, Cluster, control_channel, node_names
from chaos.core.capabilities import (
    ReportSections,
    Scenarios,
    SolutionMounts,
    option_values,
    with_stored_options,
)
from chaos.core.context import RunContext
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.memory import trim
from chaos.core.quota import QuotaWatch
from chaos.core.rest import RestWatch
from chaos.core.solution import MOUNT_CAP, MOUNT_FILES
from chaos.core.spec import TestSpec
from chaos.core.supervisor import Supervisor
from chaos.core.workload import Workload
from chaos.histories.files import read_regular, write_atomic
from chaos.histories.jsonl import HistoryRecorder
from chaos.histories.store import load_run, new_run_dir, read_json, write_json
from chaos.nemesis import table as fault_kinds
from chaos.nemesis.base import ArmsFirst, Nemesis
from chaos.nemesis.registry import describe, make_nemeses, moves_clocks, refuse_unsupported
from chaos.report import render
from chaos.workloads import registry

# seconds without a new event before the final reads (see the recovery wait)
SETTLE = 0.5
SETTLE_MAX = 3.0
# final reads that failed are tried again this many times in all, this far apart
FINAL_READ_ATTEMPTS = 3
FINAL_READ_PAUSE = 2.0
# how long the client waits for a nemesis that arms a point at its start (ArmsFirst)
ARM_WAIT = 30.0  # it only waits as long as the arming takes: up to 13 s at a load of 40


# The uid the services of the code under test run as on the nodes (``nobody``): the live folder
# is laid out so that it can write its events and claim fault points, and nothing else.
SERVICE_UID = 65534


def make_live(live: Path, nodes: int) -> None:
    """The folder shared with the nodes, laid out for an unprivileged service user:

    - ``events/`` and ``claims/``: writable by everyone (sticky), where services report and
      claim armed fault points;
    - ``control/<node>/``, ``control/any/``: written by the orchestrator only; the services
      read which points are armed, they cannot arm one.
    """
    for d in ("events", "claims"):
        (live / d).mkdir(parents=True)
        os.chmod(live / d, 0o1777)
    for node in ["any", *node_names(nodes)]:
        (live / "control" / node).mkdir(parents=True)


_SKIP = ("__pycache__", ".git")


def _apparent(root: Path) -> tuple[int, int]:
    """(apparent bytes, entries) under ``root``, from ``lstat`` alone: nothing is read or
    followed, so a sparse file counts at its full size and a FIFO does not block."""
    st = root.lstat()
    if not root.is_dir() or root.is_symlink():
        return st.st_size, 1
    total, count = 0, 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        for name in dirs + files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
                count += 1
    return total, count


def check_mounts(mounts: dict[str, str]) -> None:
    """Refuse (ValueError: exit 3) solutions larger than a solution is, before any copy."""
    total, count = 0, 0
    for host in sorted(mounts):
        try:
            size, n = _apparent(Path(host))
        except OSError as e:
            raise ValueError(f"{host}: cannot be read ({e.strerror})") from None
        total, count = total + size, count + n
        if total > MOUNT_CAP or count > MOUNT_FILES:
            raise ValueError(
                f"{host} holds {total} bytes in {count} entries, more than a solution may "
                f"({MOUNT_CAP >> 20} MiB, {MOUNT_FILES} entries); refused before anything "
                "was copied"
            )


def copy_mounts(mounts: dict[str, str], dest: Path) -> dict[str, str]:
    """Copies of the host paths a workload shows in the nodes, taken when the run starts: the
    nodes see a snapshot, read-only, never the author's live folder or what lies beside it. Links
    are copied as links (never followed on the host); caches are left out. Sizes are checked
    first (:func:`check_mounts`), and the copy itself stops at the same cap (a file that grew
    in between)."""
    check_mounts(mounts)
    out: dict[str, str] = {}
    budget = [MOUNT_CAP]

    def bounded(src: str, dst: str, *, follow_symlinks: bool = True) -> str:
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
            return dst
        data = read_regular(Path(src), budget[0] + 1)
        budget[0] -= len(data)
        if budget[0] < 0:
            raise ValueError(f"{src} grew past {MOUNT_CAP >> 20} MiB while it was copied")
        write_atomic(Path(dst), data, mode=0o644, durable=False)
        return dst

    for i, (host, inside) in enumerate(sorted(mounts.items())):
        src = Path(host)
        target = dest / str(i)
        if src.is_dir():
            shutil.copytree(
                src, target, symlinks=True, ignore=shutil.ignore_patterns(*_SKIP),
                copy_function=bounded,
            )  # fmt: skip
        else:
            target.mkdir(parents=True)
            bounded(str(src), str(target / src.name))
            target = target / src.name
        out[str(target.resolve())] = inside  # engines take absolute host paths only
    return out


class _OverQuota(Exception):
    """The run cannot go on: the code under test filled a quota while it was being set up."""


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: stop, heal, tear down, keep what was recorded."""


@dataclass(slots=True, kw_only=True)
class RunOutcome:
    run_dir: Path
    verdict: Verdict
    results: list[CheckResult]
    timings: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    error: str | None = None
    # what the run noticed but did not let decide anything (a planted link in the events folder)
    warnings: list[str] = field(default_factory=list)


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into ``Interrupted`` once; during clean-up further signals are ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        if fired:
            return
        fired.append(signum)
        raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def check_spec(spec: TestSpec, wl: Workload, backend: Backend) -> list[Nemesis]:
    """The nemeses of ``spec``, once everything it names is checked against the workload and the
    backend; ValueError for anything that cannot work. Creates nothing: ``chaos run`` checks every
    spec of a command with it before the first run starts."""
    wl.preflight(spec)
    if isinstance(wl, SolutionMounts):
        check_mounts(wl.mounts(spec))
    nemeses = make_nemeses(wl, spec)
    refuse_unsupported(wl, spec, backend)
    return nemeses


def run_test(
    spec: TestSpec,
    *,
    backend: Backend,
    store: Path,
    progress: Callable[[str], None] = lambda m: None,
    command: str = "",
    workload: Workload | None = None,
    page: bool = True,
    stored_solution: str | None = None,
    kept_at: Path | None = None,
) -> RunOutcome:
    """One run of ``spec`` on a cluster from ``backend``, stored under ``store``.

    ``page=False`` skips the HTML report (``chaos report RUN`` renders it later from the stored
    run): the verdict, history and results are the same either way. ``stored_solution``: the
    solution as the stored run names it, if not ``spec.solution`` (a grade's worker runs a copy
    of the submission it grades). ``kept_at``: the folder where the run will be kept, if not where
    it is stored (a grade copies each run to its own folder): the page names that one.

    ``workload`` overrides the registry's workload of the spec's name (tests pass an in-memory
    one). Raises ValueError for a spec or solution that cannot work and ClusterError when the
    backend cannot, both before anything is created.
    """
    t_start = time.monotonic()
    wl = workload if workload is not None else registry.get(spec.workload)
    nemeses = check_spec(spec, wl, backend)
    versions = backend.prepare(progress)
    run = _Run(spec, wl, store=store, progress=progress)
    run.record_spec(command, backend, versions, nemeses, stored_solution=stored_solution)
    run.start_recording()
    # engine check, reaping, image check and preflight, before the run's own clock starts
    run.timings["prepare"] = round(time.monotonic() - t_start, 3)
    run.mark = time.monotonic()
    with interrupts_raise():
        try:
            # every step below registers its undo on the stack: teardown runs whatever happens
            with contextlib.ExitStack() as stack:
                ctx = run.bring_up(stack, backend)
                run.drive(ctx, nemeses)
                recovered = run.recover(ctx)
                run.read_final(ctx, recovered)
        except Interrupted as e:
            run.interrupted = True
            progress(f"interrupted by {e}: healed and removed every resource of the run")
        except _OverQuota:
            progress("the code under test filled a quota before the services were up")
    run.note_events_cap()
    return run.finish(page=page, kept_at=kept_at)


class _Run:
    """One run's phases and what they share: the run folder, the history, the events tail, the
    phase timings, and what went wrong. :func:`run_test` calls the phases in order."""

    history: HistoryRecorder
    tail: EventTail

    def __init__(
        self, spec: TestSpec, wl: Workload, *, store: Path, progress: Callable[[str], None]
    ) -> None:
        self.spec, self.wl = spec, wl
        # every progress line with its time on the run's clock: spec.json's "steps" (bring-up's
        # parts: the nodes, etcd and the broker, the services; bench/bench_phases.py reads them)
        self.steps: list[tuple[float, str]] = []

        def stamped(message: str) -> None:
            self.steps.append((round(time.monotonic() - self.origin, 3), message))
            progress(message)

        self.progress = stamped
        self.run_dir = new_run_dir(store, spec.workload)
        self.live = self.run_dir / "live"
        make_live(self.live, spec.nodes)
        self.run_id = self.run_dir.name.split("-")[-1] + secrets.token_hex(2)
        self.origin = time.monotonic()
        self.interrupted = False
        self.error: str | None = None
        self.errors: list[str] = []  # what failed on the way, reported with the run
        self.over: list[str] = []  # quotas the code under test filled, as written in final.json
        self.timings: dict[str, float] = {}
        self.mark = time.monotonic()
        self.watch: QuotaWatch | None = None
        # seconds the system stood still, when that ended recovery
        self.at_rest: float | None = None

    def record_spec(
        self,
        command: str,
        backend: Backend,
        versions: dict[str, str],
        nemeses: list[Nemesis],
        *,
        stored_solution: str | None,
    ) -> None:
        """``spec.json`` as the run starts (``finish`` adds the outcome): the framework's fields,
        and the workload's options as the workload reads them, from its declarations."""
        meta: dict[str, Any] = {
            **self.spec.to_json(),
            "options": option_values(self.wl, self.spec),
            **({"solution": stored_solution} if stored_solution else {}),
            "command": command,
            "run_id": self.run_id,
            "origin_mono": self.origin,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "backend": backend.name,
            "versions": versions,
            "status": "running",
            "plan": describe(nemeses),
        }
        write_json(self.run_dir / "spec.json", meta)
        self.progress(f"run {self.run_dir}")

    def start_recording(self) -> None:
        """The history and the events tail, both on the run's clock (``origin``)."""
        self.history = HistoryRecorder(
            self.run_dir / "history.jsonl", lambda: time.monotonic() - self.origin
        )
        self.tail = EventTail(self.live, self.origin)

    def phase(self, name: str) -> None:
        # a phase boundary is a point a later reader can trust: what happened before it is on disk
        self.history.sync()
        now = time.monotonic()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self.mark, 3)
        self.mark = now

    def bring_up(self, stack: contextlib.ExitStack, backend: Backend) -> RunContext:
        """Start the nodes and deploy the system; every undo goes on ``stack``."""
        spec, wl, run_dir = self.spec, self.wl, self.run_dir
        cluster = backend.make_cluster(
            run_id=self.run_id,
            nodes=spec.nodes,
            live_dir=self.live,
            mounts=copy_mounts(wl.mounts(spec), run_dir / "mounts")
            if isinstance(wl, SolutionMounts)
            else {},
        )

        def teardown() -> None:
            self.mark = time.monotonic()
            self.progress("tearing down")
            cluster.teardown()
            self.phase("teardown")

        stack.callback(teardown)
        stack.callback(lambda: cluster.collect_logs(run_dir / "logs"))
        stack.callback(lambda: self.tail.merge_to(run_dir / "events.jsonl"))
        stack.callback(self.history.close)
        self.progress(f"starting {spec.nodes} nodes")
        cluster.start()
        ctx = self._context(stack, cluster)
        self._deploy(ctx)
        self.phase("bring_up")
        return ctx

    def _context(self, stack: contextlib.ExitStack, cluster: Cluster) -> RunContext:
        """The run's context on a started cluster: supervisor, fault ledger, quota watch."""
        spec, run_dir = self.spec, self.run_dir
        # clock faults reach the code under test through libfaketime, preloaded only in
        # runs that may move a clock (see chaos.cluster.clocks)
        supervisor = Supervisor(cluster, clock_live=self.live if moves_clocks(spec) else None)
        stack.callback(supervisor.stop)
        # beside the run, not in the live folder the nodes can write
        ledger = FaultLedger(self.history, run_dir / "faults.json", kinds=fault_kinds.recorded())
        # after the final heal (callbacks run last-in first-out), also when interrupted
        stack.callback(lambda: write_json(run_dir / "schedule.json", ledger.applied))
        stack.callback(ledger.shutdown)
        ctx = RunContext(
            spec=spec,
            cluster=cluster,
            channel=control_channel(cluster),
            run_dir=run_dir,
            live=self.live,
            origin=self.origin,
            history=self.history,
            events=self.tail,
            supervisor=supervisor,
            faults=ledger,
            progress=self.progress,
        )
        stack.callback(ctx.stop.set)
        self.watch = QuotaWatch(cluster, self.tail, ctx.stop).start()
        stack.callback(self.watch.close)
        return ctx

    def _deploy(self, ctx: RunContext) -> None:
        assert self.watch is not None
        try:
            self.wl.deploy(ctx)
        except Exception as e:
            if not self.watch.sample():
                raise
            # the code under test filled a quota before its services were up: the run
            # shows nothing, and says why (unknown), rather than failing as chaos's bug
            self.over = self.watch.close()
            self.error = f"deploy: {type(e).__name__}: {e}"
            write_json(self.run_dir / "final.json", {"error": self.error, "over_quota": self.over})
            raise _OverQuota from None
        ctx.supervisor.watch()

    def drive(self, ctx: RunContext, nemeses: list[Nemesis]) -> None:
        """The workload's client ops with the nemeses beside them, until the workload is done
        (then the nemeses get the rest of the time limit) or the time limit."""
        spec = self.spec
        self.progress(
            "running the workload"
            + (f" with nemesis {', '.join(spec.nemesis)}" if spec.nemesis else "")
        )

        def guarded(n: Nemesis) -> None:
            try:
                n.run(ctx)
            except Exception as e:  # reported with the run; heal-all still runs
                self.errors.append(f"nemesis {n.name}: {type(e).__name__}: {e}")

        threads = [
            threading.Thread(target=guarded, args=(n,), name=f"nemesis-{n.name}", daemon=True)
            for n in nemeses
        ]
        for t in threads:
            t.start()
        for n in nemeses:
            # a point armed at the start must be armed before the first operation
            if isinstance(n, ArmsFirst):
                n.armed.wait(ARM_WAIT)
        self.wl.run_client(ctx)
        deadline = time.monotonic() + spec.time_limit
        if spec.fixed_load:
            ctx.stop.set()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        ctx.stop.set()
        for t in threads:
            t.join(10)
        self.phase("workload")

    def recover(self, ctx: RunContext) -> bool:
        """Heal every fault, then wait until the system says it recovered *and* its events went
        quiet, or it came to rest without finishing (:class:`Quiescence`), or the recovery
        timeout: whether it recovered."""
        self.progress("healing every fault")
        healed = ctx.faults.shutdown()
        if healed:
            self.progress(f"healed {healed} fault(s) left active")
        self.progress(f"waiting up to {self.spec.recovery_timeout:.0f} s for recovery")
        rec_deadline = time.monotonic() + self.spec.recovery_timeout
        recovered = False
        rest = RestWatch(self.wl, self.spec)
        # recovered *and quiet*: a process just resumed from a pause may be a few ms from
        # a commit; final reads taken before it lands would miss its effect. A system that
        # never goes quiet (a periodic job) is read SETTLE_MAX after it first recovered.
        quiet_since = time.monotonic()
        first_ok: float | None = None
        while time.monotonic() < rec_deadline:
            if self.tail.poll():
                quiet_since = time.monotonic()
            now = time.monotonic()
            if self.wl.recovered(ctx):
                first_ok = now if first_ok is None else first_ok
                if now - quiet_since >= SETTLE or now - first_ok >= SETTLE_MAX:
                    recovered = True
                    break
            else:
                first_ok = None
                # not in the bound's last second: an answer from a slow store would overshoot it
                if rec_deadline - now > 1.0 and rest.still(ctx, now, quiet_since):
                    self.at_rest = rest.held(now)
                    self.progress(
                        f"the system is at rest with its work unfinished ({self.at_rest:.1f} s "
                        "without a change): reading the final state"
                    )
                    break
            time.sleep(0.1)
        self.phase("recovery")
        return recovered

    def _final_state(self, ctx: RunContext) -> dict[str, Any]:
        """The workload's final reads, tried again after a failure (a store that a loaded machine
        left slow to answer just after its faults): FINAL_READ_ATTEMPTS in all, each recorded as
        the workload records it; the last failure is raised."""
        for _ in range(FINAL_READ_ATTEMPTS - 1):
            try:
                return self.wl.final_state(ctx)
            except Exception as e:
                self.progress(f"final reads failed ({type(e).__name__}: {e}); trying again")
                time.sleep(FINAL_READ_PAUSE)
        return self.wl.final_state(ctx)

    def read_final(self, ctx: RunContext, recovered: bool) -> None:
        """The workload's final reads into ``final.json``, with whether the system recovered and
        which quotas the code under test filled."""
        assert self.watch is not None
        self.progress("reading the final state")
        try:
            final = self._final_state(ctx)
        except Exception as e:
            # the final reads failed (the system is down, or the code under test left data
            # the reads cannot parse): checkers that need them answer "unknown", saying so
            self.errors.append(f"final reads: {type(e).__name__}: {e}")
            final = {"error": f"{type(e).__name__}: {e}"}
        final["recovered"] = recovered
        if self.at_rest is not None:
            final["at_rest"] = round(self.at_rest, 3)
        self.over = self.watch.sample()
        if self.over:
            final["over_quota"] = self.over
        write_json(self.run_dir / "final.json", final)
        del final
        trim()  # what the final reads held is on disk now; the checks load it again
        if self.errors:
            self.error = "; ".join(self.errors)
        self.phase("final_reads")

    def finish(self, *, page: bool, kept_at: Path | None) -> RunOutcome:
        """Check, store and render the run (see :func:`finish`)."""
        return finish(
            self.run_dir,
            self.wl,
            self.timings,
            self.interrupted,
            self.error,
            self.progress,
            warnings=self.tail.problems,
            page=page,
            kept_at=kept_at,
            steps=self.steps,
        )

    def note_events_cap(self) -> None:
        """The events' cap reached by the last read (the merge at teardown, after the final
        reads) goes into ``final.json`` too."""
        if self.tail.over_quota is not None and self.tail.over_quota not in self.over:
            final_now = read_json(self.run_dir / "final.json", {})
            if final_now:
                final_now["over_quota"] = [*self.over, self.tail.over_quota]
                write_json(self.run_dir / "final.json", final_now)


def finish(
    run_dir: Path,
    wl: Workload,
    timings: dict[str, float],
    interrupted: bool,
    error: str | None,
    progress: Callable[[str], None],
    *,
    warnings: list[str] | None = None,
    page: bool = True,
    kept_at: Path | None = None,
    steps: list[tuple[float, str]] | None = None,
) -> RunOutcome:
    t0 = time.monotonic()
    progress("checking the history")
    results = check_stored_run(wl, with_stored_options(wl, load_run(run_dir)))
    verdict = combine(results)
    timings["check"] = round(time.monotonic() - t0, 4)
    write_results(run_dir, results)
    trim()  # the run the checks loaded is freed; the lab report loads it once more
    if isinstance(wl, Scenarios):
        write_json(run_dir / "lab-report.json", wl.lab_report(load_run(run_dir), results))
    try:
        write_history_edn(run_dir)  # for Elle, Knossos and Jepsen's own tools
    except Exception as e:  # the JSONL history is the record; the EDN copy is a convenience
        progress(f"history.edn not written: {type(e).__name__}: {e}")
    # the checks with the lab report and history.edn ("check" is the checkers' own part)
    timings["results"] = round(time.monotonic() - t0, 3)
    meta = read_json(run_dir / "spec.json", {})
    if steps is not None:
        meta["steps"] = [list(s) for s in steps]
    meta.update(
        {
            "status": "interrupted" if interrupted else "done",
            "timings": timings,
            "verdict": verdict.value,
        }
    )
    if error:
        meta["error"] = error
    if warnings:
        meta["warnings"] = [f"events folder: {w}" for w in warnings]
    write_json(run_dir / "spec.json", meta)
    if not page:
        progress(f"report page skipped (render it with `chaos report {run_dir}`)")
    else:
        render_page(run_dir, wl, progress, meta=meta, timings=timings, kept_at=kept_at)
    return RunOutcome(
        run_dir=run_dir,
        verdict=verdict,
        results=results,
        timings=timings,
        interrupted=interrupted,
        error=error,
        warnings=list(meta.get("warnings", [])),
    )


def render_page(
    run_dir: Path,
    wl: Workload,
    progress: Callable[[str], None],
    *,
    meta: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
    kept_at: Path | None = None,
) -> None:
    """Draw a stored run's page; a failure is said, never raised (the verdict stands without
    it). With ``meta``/``timings`` (a run being finished), the page's time goes into spec.json."""
    t0 = time.monotonic()
    try:
        render(
            run_dir,
            contributors=wl.report_sections() if isinstance(wl, ReportSections) else (),
            kept_at=kept_at,
        )
        if meta is not None and timings is not None:
            timings["report"] = round(time.monotonic() - t0, 3)
            write_json(run_dir / "spec.json", meta)
    except Exception as e:  # the verdict stands without its page; `chaos report` can retry
        progress(
            f"report not rendered: {type(e).__name__}: {e} (retry with `chaos report {run_dir}`)"
        )
