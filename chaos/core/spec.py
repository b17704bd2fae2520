"""The test spec: everything a run needs, resolved to plain data and stored with the run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from chaos.core.solution import REFERENCE

# TestSpec field -> the `chaos run` option that sets it (the workload is the argument; nemesis,
# triggers and options are written apart). The defaults are `chaos run`'s: a unit test compares
# them (tests/unit/test_cli_validation.py). Only the framework's generic parameters are here: a
# workload's own knobs are its declared options (chaos.core.options), in ``options``.
RUN_OPTIONS = {
    "solution": "--solution",
    "nodes": "--nodes",
    "tasks": "--tasks",
    "rate": "--rate",
    "concurrency": "--concurrency",
    "time_limit": "--time-limit",
    "recovery_timeout": "--recovery-timeout",
    "pause_duration": "--pause-duration",
    "nemesis_interval": "--nemesis-interval",
    "nemesis_jitter": "--nemesis-jitter",
    "fault_duration": "--fault-duration",
}


# The takeover wait of a workload that declares none (chaos.core.capabilities.Takeover): the
# default fault then lasts 5 s, as every run's did when AckWait (2 s) was a field of the spec.
DEFAULT_TAKEOVER = 2.0


def fault_seconds(
    *,
    fault_duration: float | None,
    pause_duration: float | None,
    takeover: float = DEFAULT_TAKEOVER,
) -> float:
    """How long a scheduled, triggered or random fault lasts: ``--fault-duration``, else
    ``--pause-duration``, else the workload's takeover wait + 3 s (a pause that outlasts the
    wait after which another process takes the paused one's work over, so that the takeover
    happens while it lasts)."""
    return float(fault_duration or pause_duration or takeover + 3.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSpec:
    """A run's parameters. Every random choice of the run derives from ``seed``."""

    __test__ = False  # not a pytest test class, despite its name

    workload: str
    solution: str = REFERENCE
    nemesis: tuple[str, ...] = ()
    seed: int = 0
    nodes: int = 3
    tasks: int | None = None
    rate: float | None = None
    concurrency: int = 3
    time_limit: float = 30.0
    recovery_timeout: float = 40.0
    pause_duration: float | None = None
    nemesis_interval: float = 8.0
    # the gap between faults is interval * uniform(1 - jitter, 1 + jitter)
    nemesis_jitter: float = 0.5
    # how long a scheduled or triggered fault lasts (default: pause_duration, else the
    # workload's takeover wait + 3)
    fault_duration: float | None = None
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
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name, option in RUN_OPTIONS.items():
            value = getattr(self, name)
            if value != defaults[name] and value is not None:
                argv += [option, str(value)]
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
