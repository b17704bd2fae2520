"""The test spec: everything a run needs, resolved to plain data and stored with the run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from chaos.core.solution import REFERENCE
from chaos.run_option import (
    POSITIVE,
    RUN,
    SECONDS,
    SECONDS_OR_NONE,
    Number,
    RunOption,
    declared,
    run_option,
)

# The takeover wait of a workload that declares none (chaos.core.capabilities.Takeover): the
# default fault then lasts DEFAULT_FAULT_SECONDS.
DEFAULT_TAKEOVER = 2.0
# seconds a default fault outlasts the workload's takeover wait
FAULT_MARGIN = 3.0
# how long a fault lasts where nothing says otherwise (a workload without a takeover wait)
DEFAULT_FAULT_SECONDS = DEFAULT_TAKEOVER + FAULT_MARGIN


def fault_seconds(
    *,
    fault_duration: float | None,
    pause_duration: float | None,
    takeover: float = DEFAULT_TAKEOVER,
) -> float:
    """How long a scheduled, triggered or random fault lasts: ``--fault-duration``, else
    ``--pause-duration``, else the workload's takeover wait + :data:`FAULT_MARGIN` s (a pause that outlasts the
    wait after which another process takes the paused one's work over, so that the takeover
    happens while it lasts)."""
    return float(fault_duration or pause_duration or takeover + FAULT_MARGIN)


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSpec:
    """A run's parameters. Every random choice of the run derives from ``seed``."""

    __test__ = False  # not a pytest test class, despite its name

    workload: str
    solution: str = REFERENCE
    nemesis: tuple[str, ...] = ()
    seed: int = 0
    # The run parameters every workload honours, each declared once as an option of `chaos run`
    # (chaos.run_option): its command-line option, its place in a grade matrix and its field here
    # are all made from this declaration. A workload's own knobs are its declared options
    # (chaos.core.options), in ``options``.
    tasks: int | None = run_option(
        None, POSITIVE, "Load mode: this many tasks, >= 1 (random amounts).", commands=RUN
    )
    rate: float | None = run_option(
        None, SECONDS, "Load mode: tasks per second (> 0) for --time-limit seconds.", commands=RUN
    )
    time_limit: float = run_option(
        30.0, SECONDS, "Seconds (> 0) of workload in load mode, else the bound on the fault phase."
    )
    concurrency: int = run_option(
        3, POSITIVE, "Clients performing operations at the same time (>= 1).", commands=RUN
    )
    recovery_timeout: float = run_option(
        40.0,
        SECONDS_OR_NONE,
        "Seconds (>= 0), after the faults are healed, for the system to finish its work.",
    )
    pause_duration: float | None = run_option(
        None,
        SECONDS,
        "Seconds (> 0) a pause lasts (default: 3 past the workload's takeover wait).",
        commands=RUN,
    )
    nemesis_interval: float = run_option(
        8.0, SECONDS, "Seconds (> 0) between the faults of a random schedule.", commands=RUN
    )
    # the gap between faults is interval * uniform(1 - jitter, 1 + jitter)
    nemesis_jitter: float = run_option(
        0.5,
        Number(float, min=0, max=1),
        "Gaps between faults vary by this fraction of the interval (0 to 1).",
        commands=RUN,
    )
    # how long a scheduled or triggered fault lasts (default: pause_duration, else the
    # workload's takeover wait + 3)
    fault_duration: float | None = run_option(
        None,
        SECONDS,
        "Seconds (> 0) a scheduled or triggered fault lasts (default: --pause-duration where "
        f"given, else {FAULT_MARGIN:g} past the workload's takeover wait, such as its AckWait: "
        f"{DEFAULT_FAULT_SECONDS:g} where it has none).",
    )
    nodes: int = run_option(
        3, POSITIVE, "How many nodes, at least 1 (with --nodes-file: all the file names)."
    )
    # event triggers ("pause worker on delivery") and a scripted timeline (a parsed --schedule)
    triggers: tuple[str, ...] = ()
    schedule: dict[str, Any] | None = None
    scenario: str | None = None
    # the workload's own options as given (``-o KEY=VALUE``); the workload reads them typed,
    # with its declared defaults, through chaos.core.capabilities.option_values
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def fixed_load(self) -> bool:
        """Whether the command sets the load (``--tasks`` or ``--rate``, the generic parameters
        every client honours): the run's fault phase then ends with the client's work. Without,
        the workload runs its own standard work and its faults get the whole time limit."""
        return self.tasks is not None or self.rate is not None

    def fault_seconds(self, takeover: float = DEFAULT_TAKEOVER) -> float:
        """How long this run's faults last, given its workload's takeover wait (see
        :func:`fault_seconds`; chaos.core.capabilities.fault_seconds asks the workload)."""
        return fault_seconds(
            fault_duration=self.fault_duration,
            pause_duration=self.pause_duration,
            takeover=takeover,
        )

    def run_argv(self) -> list[str]:
        """The arguments of ``chaos run`` that make this spec again, the seed last (options at
        their defaults left out). A parsed ``--schedule`` has no argument form: ValueError."""
        if self.schedule:
            raise ValueError("a spec with a schedule has no command line (its file is not kept)")
        argv = [self.workload]
        for option in SPEC_OPTIONS:
            value = getattr(self, option.name)
            if value != option.default and value is not None:
                argv += [option.flag, str(value)]
        if self.nemesis:
            argv += ["--nemesis", ",".join(self.nemesis)]
        for phrase in self.triggers:
            argv += ["--trigger", phrase]
        for key, value in self.options.items():
            argv += ["-o", f"{key}={value}"]
        return [*argv, "--seed", str(self.seed)]

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["nemesis"] = list(self.nemesis)
        d["triggers"] = list(self.triggers)
        return d


# the run parameters TestSpec declares, in the order `chaos run --help` shows them
SPEC_OPTIONS: tuple[RunOption, ...] = declared(TestSpec)
