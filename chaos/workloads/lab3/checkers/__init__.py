"""lab3 checkers: each a function of the lab's model of one run (chaos.workloads.lab3.model)
→ CheckResult, the model built once per check.

- ``lost-tasks``         every accepted task completed                          (``tasks``)
- ``double-apply``       no amount reached the counter twice, by etcd's record  (``applies``)
- ``counter``            the final counter is the accepted tasks' amounts       (``accounting``)
- ``exactly-once``       every revision of etcd's record accounted for          (``accounting``)
- ``idempotent-create``  one task, one event id                                 (``creates``)
- ``delivery-stats``     the broker's delivery figures, and the services' own   (``delivery``)
- ``scenario-fired``     a seed scenario's fault verifiably fired               (``scenario``)
- ``etcd-scope``         no call the nodes' etcd proxies refused     (chaos.checkers.etcd_scope)
- ``broker-config``      the broker's stream and consumer are still chaos's
                                                        (chaos.workloads.lab3.broker_config)

A task's chain of events, told in the anomalies and the lab report, is ``chains``.
"""

from __future__ import annotations

from collections.abc import Sequence

from chaos.checkers.etcd_scope import etcd_scope
from chaos.checkers.verdict import CheckResult, ModelChecker, Verdict, run_checkers
from chaos.histories.store import StoredRun
from chaos.workloads.lab3.broker_config import broker_config
from chaos.workloads.lab3.checkers.accounting import counter_checker, exactly_once
from chaos.workloads.lab3.checkers.applies import double_apply
from chaos.workloads.lab3.checkers.chains import chain
from chaos.workloads.lab3.checkers.creates import idempotent_create
from chaos.workloads.lab3.checkers.delivery import delivery_stats
from chaos.workloads.lab3.checkers.scenario import scenario_fired
from chaos.workloads.lab3.checkers.tasks import lost_tasks
from chaos.workloads.lab3.model import Lab3Run, model_of

__all__ = [
    "CHECKERS",
    "Lab3Run",
    "chain",
    "check",
    "check_run",
    "contradictions",
    "counter_checker",
    "delivery_stats",
    "double_apply",
    "exactly_once",
    "idempotent_create",
    "lost_tasks",
    "model_of",
    "scenario_fired",
]

CHECKERS: dict[str, ModelChecker[Lab3Run]] = {
    "lost-tasks": lost_tasks,
    "double-apply": double_apply,
    "counter": counter_checker,
    "exactly-once": exactly_once,
    "idempotent-create": idempotent_create,
    "delivery-stats": delivery_stats,
    "scenario-fired": scenario_fired,
    "etcd-scope": lambda run: etcd_scope(run.final),
    "broker-config": lambda run: broker_config(run.final),
}


def check_run(run: Lab3Run) -> list[CheckResult]:
    """All lab3 checkers over one model; one that crashes becomes ``unknown`` without hiding the
    others."""
    return run_checkers(CHECKERS, run)


def check(run: StoredRun) -> list[CheckResult]:
    """All lab3 checkers on one stored run: its model built once."""
    return check_run(model_of(run))


def contradictions(results: Sequence[CheckResult]) -> list[str]:
    """Pairs of lab3 verdicts on one run that cannot both be true, in words (none expected).

    The checkers read the same record from different sides; where one says an amount reached the
    counter twice and another that the counter matches the accepted amounts, one of them is wrong
    — unless a lost task made up for it, which lost-tasks then says."""
    by = {r.checker: r for r in results}
    out: list[str] = []
    da, counter, lost = by.get("double-apply"), by.get("counter"), by.get("lost-tasks")
    once = by.get("exactly-once")
    # a completed task that was never applied makes up for a double apply in the sum
    never = once is not None and any(
        a.get("kind") == "completed-never-applied" for a in once.anomalies
    )
    if da and counter and lost and not never:
        twice = da.verdict is Verdict.INVALID and any("revisions" in a for a in da.anomalies)
        if twice and counter.verdict is Verdict.VALID and lost.verdict is Verdict.VALID:
            out.append("double-apply found an amount applied twice, yet the counter matches and "
                       "no task was lost")  # fmt: skip
    if (
        counter
        and lost
        and counter.verdict is Verdict.INVALID
        and lost.verdict is Verdict.VALID
        and "never completed" in counter.summary
    ):
        out.append("counter blames tasks that never completed, yet lost-tasks found none")
    return out
