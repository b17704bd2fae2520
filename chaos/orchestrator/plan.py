"""What ``chaos run`` and ``chaos explore`` were asked, and the runs that answer it.

The command line (``chaos/cli/``) parses the options into a request and prints; everything in
between is here, as plain functions of typed values that a test calls without click: which
workload and backend, the seed, the command a run stores, the specs (one per scenario with
``--scenarios all``), each checked against the workload and the backend before the first run
starts, the lab report of several runs and the command's exit status.

A request that cannot work raises ValueError with the one line the user sees (exit 3); a backend
that cannot, ClusterError (exit 4); both before anything is created.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chaos.checkers.verdict import combine
from chaos.cluster import backends
from chaos.cluster.base import Backend, GivenMachines
from chaos.core import run_options
from chaos.core.capabilities import Scenarios, fault_seconds
from chaos.core.spec import TestSpec
from chaos.core.workload import Workload
from chaos.exits import Exit
from chaos.histories.store import DEFAULT_STORE, read_json, write_json
from chaos.nemesis.registry import make_nemeses
from chaos.nemesis.schedule import load_schedule
from chaos.orchestrator.explore import run_command
from chaos.orchestrator.run import RunOutcome, check_spec, run_test
from chaos.run_option import new_seed
from chaos.workloads import registry


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """``chaos run``'s options as parsed (the names are the options' own; None: not given).

    ``settings``: the run parameters (chaos.core.run_options: TestSpec's declared fields but
    ``nodes``) and ``backend_options`` the backends' (a nodes file), by name, each as declared
    once. ``nodes`` None: the default, or all the machines of a nodes file. ``argv``: the command
    line as typed, stored as the command that reproduces the run unless ``stored_command`` is
    given. :meth:`of` sorts a command's parsed parameters into these."""

    workload: str
    backend_name: str
    nemesis: str
    solution: str
    seed: int | None
    triggers: tuple[str, ...]
    schedule_file: Path | None
    nodes: int | None
    scenarios: str | None
    report_path: Path | None
    options: tuple[str, ...]
    no_html: bool
    stored_command: str | None
    stored_solution: str | None
    stored_path: Path | None
    store: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()

    @classmethod
    def of(cls, params: Mapping[str, Any], **given: Any) -> RunRequest:
        """The request of ``chaos run``'s parsed ``params`` (``given``: what the command
        resolved itself, such as ``nodes`` and ``argv``)."""
        return _request_of(cls, "run", params, given)


@dataclass(frozen=True, slots=True)
class RunPlan:
    """The runs of one ``chaos run``: its specs, checked, and what they run with."""

    request: RunRequest
    workload: Workload
    backend: Backend
    specs: list[TestSpec]
    seed: int
    command: str  # the command line that reproduces the whole request

    def command_of(self, spec: TestSpec) -> str:
        """The command ``spec``'s run stores: one scenario of several is stored with the
        ``chaos run`` that makes it alone; a schedule or a backend's option (a nodes file) is
        named only by the command as typed."""
        given = any(v is not None for v in self.request.backend_options.values())
        if len(self.specs) == 1 or spec.schedule or given:
            return self.command
        return run_command(spec, rerun_extra(self.request.backend_name, self.request.store, {}))


def plan_runs(request: RunRequest) -> RunPlan:
    """Every spec ``request`` asks for, each checked against the workload and the backend."""
    wl = registry.get(request.workload)
    backend, nodes = backend_for(request.backend_name, request.nodes, request.backend_options)
    seed = new_seed() if request.seed is None else request.seed
    argv = request.argv
    command = request.stored_command or (
        "chaos " + shlex.join(argv) + ("" if "--seed" in argv else f" --seed {seed}")
    )
    base = _base(request, wl, seed, nodes)
    if request.scenarios:
        specs = [TestSpec(**base, nemesis=(n,), scenario=n) for n in _scenarios(request, wl)]
    else:
        specs = [TestSpec(**base, nemesis=faults(request.nemesis))]
    for spec in specs:  # every run of the command checked before the first one starts
        check_spec(spec, wl, backend)
    return RunPlan(request, wl, backend, specs, seed, command)


def _base(request: RunRequest, wl: Workload, seed: int, nodes: int) -> dict[str, Any]:
    """The fields every spec of ``request`` shares (all but the fault and the scenario)."""
    r = request
    base: dict[str, Any] = dict(
        r.settings,
        workload=r.workload,
        solution=r.solution,
        seed=seed,
        nodes=nodes,
        triggers=tuple(r.triggers),
        options=parse_options(r.options),
    )
    # the default fault lasts the workload's takeover wait + 3, from its -o values as given
    seconds = fault_seconds(wl, TestSpec(**base))
    base["schedule"] = schedule_of(r.schedule_file, seconds, wl, r.workload)
    return base


def _scenarios(request: RunRequest, wl: Workload) -> list[str]:
    """The seed scenarios ``--scenarios all`` runs; ValueError for a workload that has none, or
    a ``--nemesis`` beside it (each scenario is its run's fault: the nemesis would be dropped)."""
    if not isinstance(wl, Scenarios):
        have = [n for n in sorted(registry.BUILTIN) if isinstance(registry.get(n), Scenarios)]
        raise ValueError(
            f"{request.workload} has no seed scenarios; workloads that have: {', '.join(have)}"
        )
    if request.nemesis.strip():
        raise ValueError(
            f"--nemesis {request.nemesis} with --scenarios all: each scenario run has the scenario "
            "as its fault; run the nemesis on its own, or add it with --trigger/--schedule"
        )
    return list(wl.scenarios)


def run_plan(plan: RunPlan, progress: Callable[[str], None]) -> list[RunOutcome]:
    """Run every spec of ``plan``, one after another; each outcome as the run stored it."""
    r = plan.request
    outcomes = []
    for spec in plan.specs:
        if len(plan.specs) > 1:
            progress(f"scenario {spec.scenario}")
        outcomes.append(
            run_test(
                spec,
                backend=plan.backend,
                store=r.store,
                progress=progress,
                command=plan.command_of(spec),
                workload=plan.workload,
                page=not r.no_html,
                stored_solution=r.stored_solution,
                kept_at=r.stored_path,
            )
        )
    return outcomes


def write_lab_report(plan: RunPlan, outcomes: Sequence[RunOutcome]) -> Path | None:
    """The workload's combined lab report of several runs (or one, with ``--lab-report-out``),
    written to ``store/WORKLOAD/lab-report.json`` and the requested file; the path to name
    (None: no report for this request)."""
    r, wl = plan.request, plan.workload
    if not isinstance(wl, Scenarios) or not (len(outcomes) > 1 or r.report_path):
        return None
    reports = {}
    for o in outcomes:
        one = read_json(o.run_dir / "lab-report.json", {})
        one["run"] = str(o.run_dir)
        reports[one.get("scenario", o.run_dir.name)] = one
    combined = wl.combined_report(reports)
    out = r.store / r.workload / "lab-report.json"
    write_json(out, combined)
    if r.report_path:
        write_json(r.report_path, combined)
    return r.report_path or out


def run_status(outcomes: Sequence[RunOutcome]) -> Exit:
    """``chaos run``'s exit status: interrupted (130) if any run was, else the verdict of all
    the runs' results together."""
    if any(o.interrupted for o in outcomes):
        return Exit.INTERRUPTED
    return combine(r for o in outcomes for r in o.results).exit_code


@dataclass(frozen=True, slots=True, kw_only=True)
class ExploreRequest:
    """``chaos explore``'s options that make its spec and backend, as parsed (None: not given;
    ``nodes`` None: the default, or all the machines of a nodes file; ``settings`` and
    ``backend_options`` as in :class:`RunRequest`)."""

    workload: str
    backend_name: str
    solution: str
    seed: int | None
    nodes: int | None
    options: tuple[str, ...]
    store: Path
    settings: Mapping[str, Any] = field(default_factory=dict)
    backend_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, params: Mapping[str, Any], **given: Any) -> ExploreRequest:
        """The request of ``chaos explore``'s parsed ``params`` that make its spec and backend
        (``given``: what the command resolved itself, such as ``nodes``)."""
        return _request_of(cls, "explore", params, given)


R = TypeVar("R", RunRequest, ExploreRequest)


def _request_of(
    cls: type[R], command: str, params: Mapping[str, Any], given: Mapping[str, Any]
) -> R:
    """Sort ``command``'s parsed parameters into ``cls``: the declared run parameters into
    ``settings``, the backends' options into ``backend_options``, every other by its own name
    (TypeError for one ``cls`` has no field for: the command must take its own out first)."""
    settings = run_options.spec_values(command, params)
    backend = run_options.backend_values(command, params)
    settings.pop("nodes", None)  # resolved with the backend: the request's own field
    rest = {k: v for k, v in params.items() if k not in settings and k not in backend}
    rest.pop("nodes", None)
    return cls(**{**rest, **given}, settings=settings, backend_options=backend)


@dataclass(frozen=True, slots=True)
class ExplorePlan:
    """The base spec an explore varies, checked, and what its runs run with."""

    workload: Workload
    backend: Backend
    spec: TestSpec
    command: Callable[[TestSpec], str]  # the `chaos run` each of its runs stores


def plan_explore(request: ExploreRequest) -> ExplorePlan:
    """The spec ``request`` explores around, checked against the workload and the backend."""
    r = request
    wl = registry.get(r.workload)
    backend, count = backend_for(r.backend_name, r.nodes, r.backend_options)
    spec = TestSpec(
        **r.settings,
        workload=r.workload,
        solution=r.solution,
        seed=new_seed() if r.seed is None else r.seed,
        nodes=count,
        options=parse_options(r.options),
    )
    # each run stores the `chaos run` that reproduces it alone, on the same backend and store
    extra = rerun_extra(r.backend_name, r.store, r.backend_options)
    check_spec(spec, wl, backend)
    return ExplorePlan(wl, backend, spec, lambda one: run_command(one, extra))


def check_faults(
    workload: str,
    *,
    nemesis: str,
    triggers: tuple[str, ...],
    nodes: int,
    schedule_file: Path | None,
) -> None:
    """ValueError when a ``chaos run``'s faults cannot be made on ``workload``: a fault, target,
    trigger or schedule step it does not have. ``chaos grade`` checks its matrix's runs so before
    any starts, on the machine that grades: no backend is asked, nothing is created."""
    wl = registry.get(workload)
    spec = TestSpec(
        workload=workload,
        nemesis=faults(nemesis),
        triggers=triggers,
        nodes=nodes,
        # any duration: only the steps' names and targets are checked
        schedule=schedule_of(schedule_file, 3.0, wl, workload),
    )
    make_nemeses(wl, spec)


DEFAULT_NODES = TestSpec(workload="").nodes


def backend_for(name: str, nodes: int | None, options: Mapping[str, Any]) -> tuple[Backend, int]:
    """The backend with its declared ``options``, and the run's number of nodes: ``nodes``
    (None: the default), or on a backend given its machines (a nodes file) all of them (a
    ``nodes`` beside it, as a stored command has, must agree). ValueError for an unknown
    backend, an option it does not take or a count its machines are not."""
    backend = backends.get(name, **options)
    if not isinstance(backend, GivenMachines):
        return backend, nodes or DEFAULT_NODES
    have = backend.machines
    if nodes is not None and nodes != have:
        raise ValueError(f"--nodes {nodes}: {backend.given_by} names {have} node(s)")
    return backend, have


def faults(nemesis: str) -> tuple[str, ...]:
    """``--nemesis pause,kill:broker`` as its faults."""
    return tuple(n.strip() for n in nemesis.split(",") if n.strip())


def parse_options(items: Sequence[str]) -> dict[str, str]:
    """``("lock_at_least=2", "cron=10")`` -> a dict; the workload validates the values."""
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--option {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def schedule_of(
    path: Path | None, default_duration: float, wl: Workload, name: str
) -> dict[str, Any] | None:
    """``--schedule``, parsed (its triggers against the workload's hold points) before anything
    starts; ValueError (a ScheduleError naming the file and line) when it cannot be used."""
    if path is None:
        return None
    plan = load_schedule(path, default_duration=default_duration, workload=wl, workload_name=name)
    return plan.to_json()


def rerun_extra(backend_name: str, store: Path, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The options a stored command needs beside its spec's: the backend, its declared options
    as given and the store it ran on."""
    extra: tuple[str, ...] = ("--backend", backend_name) if backend_name != "docker" else ()
    for o in backends.options():
        if options.get(o.name) is not None:
            extra += (o.flag, str(options[o.name]))
    return extra + (("--store", str(store)) if store != DEFAULT_STORE else ())
