"""Optional workload capabilities, as Jepsen's ``Kill``, ``Pause`` and ``Primary`` are for a DB.

A workload declares one by implementing it; callers ask with ``isinstance`` and fall back (or
refuse with a message that names the workload) when it is absent. Nothing is found by
``hasattr``. Every method here must only read the system's state unless its contract says
otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from chaos.checkers.verdict import CheckResult
from chaos.core import options as declared_options
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.spec import DEFAULT_TAKEOVER, TestSpec
from chaos.core.target import Target
from chaos.histories.store import StoredRun, workload_of
from chaos.report.contrib import SectionContributor


@dataclass(frozen=True, slots=True)
class FaultPoint:
    """A one-shot fault the system fires at an exact place of its protocol (lab3's scenarios).

    ``component`` is the process that fires it; ``crashes`` whether firing kills that process (the
    supervisor's restart is then the heal).
    """

    component: str
    crashes: bool
    help: str = ""


@dataclass(frozen=True, slots=True)
class HoldPoint:
    """A place where a process of the system can be held for a trigger (``pause worker on
    delivery``): the process reports a ``fault-point`` event and waits for its release file."""

    component: str
    kind: str
    where: str

    @property
    def file(self) -> str:
        return f"hold-{self.component}-{self.kind}"


@runtime_checkable
class SolutionMounts(Protocol):
    """The workload runs code from a solution folder: host folders to mount read-only, by the
    path they get inside each node. Must not create or change anything."""

    def mounts(self, spec: TestSpec) -> dict[str, str]: ...


@runtime_checkable
class Solutions(Protocol):
    """The workload runs a solution, the code under test: one of its built-in ones by name, or a
    user's folder with protocol.py (``--solution``).

    ``solutions()`` lists the built-in names (``--solution``'s help is made from them); the
    correct one is named :data:`~chaos.core.solution.REFERENCE`, the default. It must only list
    them, cheaply: ``--help`` asks."""

    def solutions(self) -> Sequence[str]: ...


@runtime_checkable
class WorkloadOptions(Protocol):
    """The workload takes ``-o KEY=VALUE`` options, each declared once here, in ``options``.

    ``chaos run``'s help, the grade matrix's check, the run's ``spec.json`` (its ``options``)
    and the docs' option tables are derived from this tuple, so it must be complete: an option
    read but not declared is refused at every ``-o``. Every knob of the workload's own is here,
    never a field of the framework's TestSpec. ``preflight`` must validate the run's options
    with :func:`option_values` (never by hand) and the workload must read their values as that
    returns them, typed, with the defaults declared here; a default written anywhere else can
    drift from the docs. Declaring must not import anything heavy: ``--help`` reads it."""

    options: tuple[WorkloadOption, ...]


def options_of(workload: object) -> tuple[WorkloadOption, ...]:
    """The options a workload declares (none when it does not have the capability)."""
    return workload.options if isinstance(workload, WorkloadOptions) else ()


OptionValues = Mapping[str, int | float | str]


def option_values(workload: object, spec: TestSpec) -> dict[str, int | float | str]:
    """The run's workload options as the workload reads them: parsed by its declarations, each
    declared default filled in; ValueError for a name or value they refuse. The run's
    ``spec.json`` records these (the declarations are the one source of both)."""
    return declared_options.parse(spec.workload, options_of(workload), spec.options)


def stored_option_values(workload: object, spec: Mapping[str, Any]) -> dict[str, int | float | str]:
    """A stored run's workload options, read back through the same declarations (a run stored
    before they were declared kept them at the spec's top level: see
    :func:`chaos.core.options.stored`); ValueError naming what is wrong."""
    return declared_options.stored(workload_of(dict(spec)), options_of(workload), spec)


def with_stored_options(workload: object, run: StoredRun) -> StoredRun:
    """``run`` with its spec's ``options`` read back through the workload's declarations
    (typed, defaults filled in), as its checkers read them; ValueError for a stored value the
    declarations refuse."""
    values = stored_option_values(workload, run.spec)
    return dataclasses.replace(run, spec={**run.spec, "options": values})


@runtime_checkable
class Takeover(Protocol):
    """Another process takes a stalled one's work over after a wait the run's options set
    (JetStream's AckWait: the broker delivers an unACKed message again).

    ``takeover_seconds(values)`` is that wait, from the run's option values (as
    :func:`option_values` gives them); it must only read them. A fault lasts this wait + 3 s
    unless the command says otherwise (so the takeover happens while it lasts), and ``chaos
    explore``'s brief pause is a fraction of it (the others go on without a takeover). A workload
    without it is given :data:`~chaos.core.spec.DEFAULT_TAKEOVER`."""

    def takeover_seconds(self, values: OptionValues) -> float: ...


def takeover_seconds(workload: object, spec: TestSpec) -> float:
    """The workload's takeover wait in this run (see :class:`Takeover`)."""
    if isinstance(workload, Takeover):
        return float(workload.takeover_seconds(option_values(workload, spec)))
    return DEFAULT_TAKEOVER


def fault_seconds(workload: object, spec: TestSpec) -> float:
    """How long a fault of this run lasts when the command does not say (see
    :func:`chaos.core.spec.fault_seconds`)."""
    return spec.fault_seconds(takeover_seconds(workload, spec))


@runtime_checkable
class Quiescence(Protocol):
    """The system can say, during recovery, that it has stopped moving although its work is not
    done (a task that nothing will ever complete: its message gone, acknowledged before its
    work), so that the run reads its final state then instead of waiting out
    ``--recovery-timeout`` for what cannot come.

    ``at_rest(ctx)`` is None while anything is still owed that could change the final state (a
    message pending or unacknowledged in the broker, work waiting to be published); otherwise a
    fingerprint that any later write changes (the store's raft index). It must only read. It may
    read what the code under test wrote: a lie there can only end the wait sooner, on the state as
    it is, never change what the checkers make of that state. ``rest_grace(values)`` is how long
    a process may go on working unseen (no event, no write) before its write lands, from the
    run's option values: the run reads the final state once the fingerprint and the events have
    stayed the same that long (``final.json``'s ``at_rest``)."""

    def at_rest(self, ctx: RunContext) -> object | None: ...

    def rest_grace(self, values: OptionValues) -> float: ...


@runtime_checkable
class FaultPoints(Protocol):
    """The system has fault points (``--nemesis relay-crash-before-publish``).

    ``fault_points`` names them; ``observe`` is evidence of the state a point left, taken the
    moment it fires (before anything recovers it): it must only read, and may raise (the error is
    recorded instead)."""

    fault_points: Mapping[str, FaultPoint]

    def observe(self, ctx: RunContext) -> dict[str, Any]: ...


@runtime_checkable
class HostFaultPoints(Protocol):
    """Some of the system's fault points are fired by what the orchestrator runs, not by the code
    under test (lab3's ``txn-error-*``: each node's etcd proxy fails a transaction), so their
    firing is the host's word, never a claim a service makes.

    ``host_points`` names them (each is also in ``fault_points``). ``arm_host_point`` arms one on
    every node and returns the arming's generation; ``host_point_fired`` says where that arming
    fired, from what the host observed (``[{"node", "time", ...}]``, empty until it fires; it must
    only read); ``disarm_host_point`` disarms it everywhere and must be idempotent."""

    host_points: Mapping[str, Any]

    def arm_host_point(self, ctx: RunContext, point: str) -> str: ...

    def host_point_fired(self, ctx: RunContext, point: str, gen: str) -> list[dict[str, Any]]: ...

    def disarm_host_point(self, ctx: RunContext, point: str) -> None: ...


@runtime_checkable
class HoldPoints(Protocol):
    """The system can hold a process at named points, for triggers.

    ``hold_points`` maps a trigger's ``(role, moment, event kind)`` — ``("worker", "on",
    "delivery")`` — to the point it arms."""

    hold_points: Mapping[tuple[str, str, str], HoldPoint]


@runtime_checkable
class TxnPoints(Protocol):
    """The system numbers the transactions the code under test makes in each of its functions, and
    can hold a process before or after any of them (``kill api after txn 1 of create``; see
    chaos.node.store).

    ``txn_functions`` maps each function of the solution to the component that runs it
    (lab3: ``{"create": "api", "complete": "worker"}``); ``txn_roles`` maps the extra role words a
    trigger may use to a component (lab1: ``{"holder": "orders"}``); ``one_task`` is the workload
    options that make a run do one unit of work (lab3: one task; lab1: one night), so that a
    second fault lands in the retry of the work the first one interrupted, with whatever else
    that retry needs (lab3: an AckWait its first kill's restart cannot outlast). ``rival`` is the
    event kind by which another process takes over the held one's work (lab3: ``commit``, a
    redelivered copy committed; lab1: ``lock-acquired``, the next holder): a pause ``until`` it
    resumes the held process just as its rival acts, the race check-then-act and night-guard bugs
    live in."""

    txn_functions: Mapping[str, str]
    txn_roles: Mapping[str, str]
    one_task: Mapping[str, str]
    rival: str


@runtime_checkable
class WritePoints(Protocol):
    """The system's writes pass through a vantage point the code under test cannot reach (each
    node's root-owned etcd proxy), which can hold one write for a trigger: ``kill worker after
    write of counter``. The code under test gets no sign before the fault: nothing it can read is
    armed, it numbers nothing, and a held call looks like a slow one until the fault happened.

    ``write_groups`` maps the word a trigger names to the key prefixes whose write is the point
    (lab3: ``{"counter": ("/lab3/counter",), ...}``). ``arm_write_point`` arms the first ``op``
    — a ``write`` ``before`` (could write) or ``after`` (did write) under a group, or a ``read``
    of a key under it (``pause worker after read of dedup``) — on every node, and returns the
    arming's generation; with ``hold``, the proxy lets the held call go on by itself that many
    seconds after it held it (when the call lands must not wait on the orchestrator's own
    latency), unless the orchestrator released it sooner; ``write_point_fired`` is the proxy's note (``node``, ``time``,
    ``port``: the sender's TCP port, ``keys``) or None, and must only read; ``write_point_writer``
    names the component that holds that connection, as the host sees it (never the process's own
    word), or None; ``release_write_point`` lets the held write go on, or drops it (``forward``
    False: its sender was killed); ``disarm_write_point`` must be idempotent; ``group_state``
    is the group's keys with their values (a digest of each pair), by the orchestrator's own
    read (None: no answer), so that a held call ends once another process wrote a value the
    group did not hold at the firing — what the held one was held back from — never on a
    revision alone, which the code under test could move with a write of what is already there,
    nor on a key leaving (a lease that expires is no writer); it must only read.

    The broker's steps are points of the same kind, decided by each node's root-owned NATS proxy
    (chaos.node.nats_proxy): ``op`` one of :data:`BROKER_OPS` — ``publish`` before/after, ``ack``
    before/after, ``delivery`` after — of a group in ``broker_groups`` (lab3: ``tasks``), whose
    sender is one of ``broker_components``; ``write_point_writer``, ``release_write_point`` and
    ``disarm_write_point`` take the ``op`` to know which proxy."""

    write_groups: Mapping[str, tuple[str, ...]]
    broker_groups: Mapping[str, BrokerGroup]
    broker_components: tuple[str, ...]

    def arm_write_point(
        self,
        ctx: RunContext,
        op: str,
        moment: str,
        group: str,
        hold: float | None = None,
        then: int = 0,
    ) -> str:
        """Arm every node's proxy; return the generation. ``then`` > 0 arms that many later
        firings with it (generations :func:`chained`): each proxy takes the next one as soon as
        the one before fired anywhere in the cluster, with no word from the orchestrator, whose
        latency must not decide whether a later firing (a redelivery's write) is caught."""
        ...

    def write_point_fired(self, ctx: RunContext, gen: str) -> dict[str, Any] | None: ...

    def write_point_writer(
        self, ctx: RunContext, node: str, port: int, op: str = "write"
    ) -> str | None: ...

    def release_write_point(
        self, ctx: RunContext, node: str, gen: str, *, forward: bool, op: str = "write"
    ) -> None: ...

    def disarm_write_point(self, ctx: RunContext, op: str = "write") -> None: ...

    def group_state(self, ctx: RunContext, group: str) -> frozenset[str] | None: ...


def chained(gen: str, k: int) -> str:
    """The generation of the ``k``-th firing (1-based) of an arming made with ``then``: the
    node's proxies (chaos.node.proxy_points, standard library only) name them the same way."""
    return gen if k <= 1 else f"{gen}-{k}"


# the broker's points, held by the nodes' NATS proxies (the others are the etcd proxies')
BROKER_OPS = ("publish", "ack", "delivery")


@dataclass(frozen=True, slots=True)
class BrokerGroup:
    """A broker point's group: the subjects its publishes go to (``publish``), and the prefix of
    the ACK subjects of its consumer's deliveries (``ack``, and ``delivery``: a message whose
    reply subject is one). Prefixes, as the NATS proxy matches them."""

    publish: tuple[str, ...]
    acks: tuple[str, ...]

    def subjects(self, op: str) -> list[str]:
        return list(self.publish if op == "publish" else self.acks)


def write_point(component: str, moment: str, op: str, group: str) -> HoldPoint:
    """The point a write (or read) trigger names, held by the etcd proxy, not by the process; a
    broker step (:data:`BROKER_OPS`), held by the NATS proxy."""
    what = {"write": "a transaction that writes", "read": "a read of"}.get(op, f"the {op} of")
    proxy = "NATS" if op in BROKER_OPS else "etcd"
    return HoldPoint(
        component,
        f"{moment}-{op}-{group}",
        f"{component}: {moment} {what} its {group} (held by the {proxy} proxy)",
    )


def txn_point(component: str, moment: str, n: int, fn: str) -> HoldPoint:
    """The hold point before or after the ``n``-th transaction of one call of ``fn``."""
    return HoldPoint(
        component,
        f"{moment}-txn{n}-{fn}",
        f"{component}: {moment} transaction {n} of the solution's {fn}",
    )


@runtime_checkable
class PauseTarget(Protocol):
    """``--nemesis pause`` alone means the workload's own pause: whoever is doing the interesting
    thing right now (lab3: the busy worker; lab1: the lock holder). ``pause_target`` returns that
    process, or None when nobody is at the moment; it must only read."""

    def pause_target(self, ctx: RunContext) -> Target | None: ...


@runtime_checkable
class FaultAims(Protocol):
    """Where a fault named without a target aims on this workload.

    ``fault_aims`` maps a fault's name to the target spec it takes when ``--nemesis`` (or a grade
    matrix) names the fault alone: ``--nemesis clock`` on lab1 is ``clock:skew=4:standby``, because
    a standby's clock ahead is what defeats a lease judged on each replica's own clock, while a
    random replica's clock catches it by luck. An aim must be a spec the fault accepts; it never
    replaces a target the user wrote, and the run's spec records the aimed spec, so the stored
    command reproduces it."""

    fault_aims: Mapping[str, str]


@runtime_checkable
class RoleResolver(Protocol):
    """The workload names the processes that play a role right now (``holder``, ``leader``,
    ``broker``, ``primaries``).

    ``resolve_role(ctx, role)`` returns the targets that currently play the role (an empty list
    when nobody does at the moment), or None when the workload does not know the role. It must
    only read the system's state (events, the store), never change it."""

    def resolve_role(self, ctx: RunContext, role: str) -> list[Target] | None: ...


@runtime_checkable
class Names(Protocol):
    """The words a command may use about the workload, known before anything starts, so that a
    typo (``--nemesis pause:wroker``, ``--trigger '... until comit'``) is refused before a
    container does.

    ``roles`` is every role a fault target may name: each component the workload supervises
    (``worker``, ``etcd``) and each role ``resolve_role`` answers (``leader``, ``holder``).
    ``event_kinds`` is every event kind its processes report (a trigger's ``until``). Both must
    be complete — a missing word refuses a command that would have worked — and are compared
    with real runs by the integration tests (tests/integration/test_report_rerender.py)."""

    roles: Sequence[str]
    event_kinds: Sequence[str]


@runtime_checkable
class Scenarios(Protocol):
    """The workload has named seed scenarios (``chaos run lab3 --scenarios all``) and a report
    that sums them up.

    ``scenarios`` are fault point names, one run each; ``lab_report`` is one run's part of the
    report, ``combined_report`` joins the parts (by scenario name). Both are pure functions of
    stored data."""

    scenarios: Sequence[str]

    def lab_report(self, run: StoredRun, results: list[CheckResult]) -> dict[str, Any]: ...

    def combined_report(self, reports: dict[str, dict[str, Any]]) -> dict[str, Any]: ...


@runtime_checkable
class ReportSections(Protocol):
    """The workload adds sections of its own to its runs' report pages (lab1's unsafe-lease story,
    lab3's scenario table). Each contributor renders from the stored run and the checkers'
    results only (see :mod:`chaos.report.contrib`)."""

    def report_sections(self) -> Sequence[SectionContributor]: ...


@runtime_checkable
class Gradable(Protocol):
    """The workload can be graded (``chaos grade``): a default matrix of configurations and the
    shipped solutions that serve as control rows.

    ``grade_matrix`` is the path of its default ``grade.yaml`` (see docs/grading.md);
    ``grade_controls`` maps a built-in solution's name to ``"reference"`` (a correct solution: its
    failures are false alarms) or ``"buggy"`` (a planted bug: its passes are misses)."""

    grade_matrix: Path
    grade_controls: Mapping[str, str]
