"""Whether a system that can tell (:class:`~chaos.core.capabilities.Quiescence`) has come to rest
with its work unfinished: nothing owed, its fingerprint and the events unchanged for its grace.

Two waits end on it: recovery (the final state is read then, not after ``--recovery-timeout``) and
a trigger's wait for a later firing (nothing left in the system can reach its point again)."""

from __future__ import annotations

from chaos.core.capabilities import Quiescence, option_values
from chaos.core.context import RunContext
from chaos.core.spec import TestSpec
from chaos.core.workload import Workload

# a workload's at_rest is asked at most this often (each answer is a round trip to the store and
# the broker, slow on a loaded machine)
REST_EVERY = 0.5


class RestWatch:
    """Polled by a wait: ``still`` says whether the system has been at rest for its grace."""

    def __init__(self, wl: Workload, spec: TestSpec) -> None:
        self.wl = wl if isinstance(wl, Quiescence) else None
        self.grace = (
            self.wl.rest_grace(option_values(wl, spec)) if self.wl is not None else float("inf")
        )
        self.mark: object | None = None
        self.since = 0.0
        self.asked = -REST_EVERY

    @property
    def can_tell(self) -> bool:
        return self.wl is not None

    def still(self, ctx: RunContext, now: float, quiet_since: float) -> bool:
        """At rest since at least the grace, counted from the later of the last change of the
        fingerprint and ``quiet_since`` (the last new event the caller saw)."""
        if self.wl is None or now - self.asked < REST_EVERY:
            return False
        self.asked = now
        mark = self.wl.at_rest(ctx)
        if mark is None or self.mark is None or mark != self.mark:
            self.mark, self.since = mark, now  # something still owed, or it just moved
            return False
        return now - max(self.since, quiet_since) >= self.grace

    def held(self, now: float) -> float:
        """How long the fingerprint has stood still."""
        return now - self.since
