"""Nemeses by name, as the CLI and specs spell them, and the plan a spec resolves to.

``--nemesis`` takes comma-separated faults, each optionally with a target: ``pause:worker``,
``kill:broker``, ``partition:halves``, ``freeze:n2+n3`` (``,n3`` right after a node name also
continues its list). Lab fault points (``relay-crash-before-publish``...) are faults too.

- ``pause`` alone, with no target, on a workload that has a ``pause_target``, is the lab's own
  pause: whoever is doing the interesting thing right now (lab3: the busy worker; lab1: the lock
  holder), once in the standard scenario and every interval under load.
- Any other set of faults becomes a random schedule drawn from the seed: one fault at a time, a
  jittered interval apart, each for the fault duration.
- ``--schedule FILE.yaml`` adds a scripted timeline; ``--trigger PHRASE`` adds event triggers.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any

from chaos.cluster.base import Backend, Capable, SocketOwners
from chaos.core.capabilities import (
    FaultAims,
    FaultPoints,
    HostFaultPoints,
    Names,
    PauseTarget,
    WritePoints,
    fault_seconds,
)
from chaos.core.rest import RestWatch
from chaos.core.spec import TestSpec
from chaos.core.workload import Workload
from chaos.nemesis.base import Nemesis
from chaos.nemesis.claimpoint import ClaimedArming
from chaos.nemesis.faultpoint import Arming, FaultPointNemesis
from chaos.nemesis.hostpoint import HostArming
from chaos.nemesis.pause import PauseNemesis
from chaos.nemesis.plan import Choice, Step, generate
from chaos.nemesis.runner import ScheduleNemesis
from chaos.nemesis.table import BY_NAME, FAULTS, NEEDS, fault_table
from chaos.nemesis.targets import check_target
from chaos.nemesis.trigger import WRITE_KIND, TriggerNemesis, bind, parse_trigger
from chaos.nemesis.writepoint import WriteTriggerNemesis


def parse_nemesis(
    items: tuple[str, ...] | list[str], points: Collection[str] = ()
) -> list[tuple[str, str | None]]:
    """``("pause:worker", "partition:n1", "n2", "kill")`` -> [(pause, worker), (partition, n1+n2), (kill, None)]."""
    out: list[tuple[str, str | None]] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        name, _, target = item.partition(":")
        if name in FAULTS or name in points:
            if target and name in points:
                raise ValueError(f"lab fault point {name} takes no target")
            out.append((name, target or None))
        elif out and out[-1][1] is not None and ":" not in item:
            # "partition:n1,n2": the comma split a node list
            prev, tgt = out[-1]
            out[-1] = (prev, f"{tgt}+{item}")
        else:
            known = [*FAULTS, *points]
            raise ValueError(f"unknown nemesis {name!r}; known: {', '.join(known)}")
    return out


def aimed(wl: Workload, faults: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """Each fault named without a target takes the workload's aim for it (``FaultAims``)."""
    aims = wl.fault_aims if isinstance(wl, FaultAims) else {}
    return [(name, target if target is not None else aims.get(name)) for name, target in faults]


def moves_clocks(spec: TestSpec) -> bool:
    """Whether the run may move clocks (a fault whose row says ``moves_clocks`` in ``--nemesis``,
    the schedule file or a trigger): only then do the code under test's processes start with
    libfaketime preloaded."""
    names = [str(item).strip().partition(":")[0] for item in spec.nemesis]
    if spec.schedule:
        names += [str(s.get("fault")) for s in spec.schedule.get("steps", [])]
        names += [str(t).split()[0] for t in spec.schedule.get("triggers", []) if str(t).split()]
    names += [str(t).split()[0] for t in spec.triggers if str(t).split()]
    return any(BY_NAME[n].moves_clocks for n in names if n in BY_NAME)


def planned_steps(
    spec: TestSpec, choices: list[Choice], duration: float | None = None
) -> list[Step]:
    """The random schedule of a spec: a pure function of the spec (its seed included) and of how
    long a fault lasts (default: the spec's own, with the default takeover wait)."""
    return generate(
        choices,
        rng=random.Random(f"{spec.seed}:schedule"),
        horizon=spec.time_limit,
        interval=spec.nemesis_interval,
        duration=spec.fault_seconds() if duration is None else duration,
        jitter=spec.nemesis_jitter,
    )


def check_targets(wl: Workload, spec: TestSpec) -> None:
    """ValueError, before anything starts, for a fault whose target can name nothing on this
    workload: a misspelt role (``pause:wroker``), a node past the cluster, an argument that does
    not parse. Roles are checked against the workload's :class:`~chaos.core.capabilities.Names`
    (a workload without it is checked when the fault starts)."""
    points = wl.fault_points if isinstance(wl, FaultPoints) else {}
    roles = tuple(wl.roles) if isinstance(wl, Names) else None
    asked = [
        (f"--nemesis {name}:{target}", name, target)
        for name, target in parse_nemesis(spec.nemesis, points)
        if name not in points and target
    ]
    for s in (spec.schedule or {}).get("steps", []):
        if s.get("target") and s.get("fault") in BY_NAME:
            asked.append((str(s.get("source") or "--schedule"), s["fault"], str(s["target"])))
    for where, name, target in asked:
        kind = BY_NAME[name]
        try:
            for t in kind.targets_in(target):
                check_target(t, roles if kind.roles else (), spec.nodes)
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"{where}: {e}") from None


def make_nemeses(wl: Workload, spec: TestSpec) -> list[Nemesis]:
    """Every nemesis a spec asks for, ready to run; raises ValueError for a bad name, target or
    phrase."""
    check_targets(wl, spec)
    points = wl.fault_points if isinstance(wl, FaultPoints) else {}
    faults = fault_table(wl)
    out: list[Nemesis] = []
    choices: list[Choice] = []
    for name, target in aimed(wl, parse_nemesis(spec.nemesis, points)):
        if name in points:
            # the difference between points is data: who fires it (the host's proxies, or the
            # process that claims it) and whether the host then crashes the claimer
            arming: Arming = ClaimedArming(crashes=points[name].crashes)
            if isinstance(wl, HostFaultPoints) and name in wl.host_points:
                arming = HostArming(wl)
            out.append(
                FaultPointNemesis(
                    name,
                    component=points[name].component,
                    arming=arming,
                    observe=wl.observe if isinstance(wl, FaultPoints) else None,
                )
            )
        else:
            choices.append(Choice(fault=name, target=target))
    duration = fault_seconds(wl, spec)
    if choices == [Choice(fault="pause")] and isinstance(wl, PauseTarget):
        once = not spec.fixed_load
        out.append(
            PauseNemesis(
                wl.pause_target, duration=duration, interval=spec.nemesis_interval, once=once
            )
        )
    elif choices:
        out.append(ScheduleNemesis(planned_steps(spec, choices, duration), faults))
    triggers = list(spec.triggers)
    if spec.schedule:
        steps = [Step(**s) for s in spec.schedule.get("steps", [])]
        if steps:
            out.append(ScheduleNemesis(steps, faults))
        triggers += list(spec.schedule.get("triggers", []))
    for phrase in triggers:
        tr = bind(parse_trigger(phrase), wl, spec.workload)
        settings: dict[str, Any] = {
            "default_duration": duration,
            "wait": spec.time_limit,
            "rest": lambda: RestWatch(wl, spec),
        }
        if tr.write is not None and isinstance(wl, WritePoints):
            out.append(WriteTriggerNemesis(tr, faults[tr.fault], writes=wl, **settings))
        else:
            out.append(TriggerNemesis(tr, faults[tr.fault], **settings))
    return out


def describe(nemeses: list[Nemesis]) -> list[dict[str, Any]]:
    """What the run will do, for spec.json: steps of schedules, triggers, lab points."""
    out: list[dict[str, Any]] = []
    for n in nemeses:
        if isinstance(n, ScheduleNemesis):
            out.append({"nemesis": "schedule", "steps": [s.to_json() for s in n.steps]})
        elif isinstance(n, TriggerNemesis):
            out.append({"nemesis": "trigger", **n.trigger.to_json(), "duration": n.duration})
        else:
            out.append({"nemesis": n.name})
    return out


def faults_used(wl: Workload, spec: TestSpec) -> set[str]:
    """The fault kinds a spec can apply: ``--nemesis``, schedule steps and triggers."""
    points = wl.fault_points if isinstance(wl, FaultPoints) else {}
    used = {name for name, _ in parse_nemesis(spec.nemesis, points) if name not in points}
    if spec.schedule:
        used |= {str(s["fault"]) for s in spec.schedule.get("steps", [])}
    triggers = [*spec.triggers, *(spec.schedule or {}).get("triggers", [])]
    used |= {parse_trigger(p).fault for p in triggers}
    return used


def _refuse_write_points(spec: TestSpec, backend: Capable) -> None:
    """A write or read point's sender is found by the host (``SocketOwners``): a backend without
    it would leave every such trigger unfired, and the run unknown, after the whole run."""
    triggers = [*spec.triggers, *(spec.schedule or {}).get("triggers", [])]
    for phrase in triggers:
        if WRITE_KIND.match(parse_trigger(phrase).kind) and not backend.supports(SocketOwners):
            raise ValueError(
                f"trigger {phrase!r}: a write or read point needs the SocketOwners capability "
                f"(the host finds the process that sent the held call), which backend "
                f"{getattr(backend, 'name', '?')} does not have; use the docker backend, or a "
                "hold point (docs/nemesis.md, 'Triggers')"
            )


def refuse_unsupported(wl: Workload, spec: TestSpec, backend: Backend) -> None:
    """ValueError naming the fault and the backend when the backend says it cannot do a fault the
    spec asks for (``freeze`` without a freezer): before the run starts, not halfway through."""
    if not isinstance(backend, Capable):
        return
    _refuse_write_points(spec, backend)
    for fault in sorted(faults_used(wl, spec)):
        need = NEEDS.get(fault)
        if need is not None and not backend.supports(need):
            raise ValueError(
                f"fault {fault} needs the {need.__name__} capability, which backend "
                f"{getattr(backend, 'name', '?')} does not have; use a backend that has it (docker), or another "
                "fault (pause stops processes with SIGSTOP on any backend)"
            )
