"""Whether a stored run holds enough to be judged at all.

A run's checkers judge what its files hold. A folder cut short — the orchestrator killed before
its final reads, a history that recorded nothing — holds a prefix, and a prefix of a bad run can
look clean: the double apply had not happened yet, or had happened and not yet been read back.
So a run whose record is incomplete is never ``valid``: this checker answers ``unknown`` and says
why, and an anomaly the others found in the prefix still makes the run ``invalid``.

A run where the code under test filled a quota (``final.json`` → ``over_quota``, written by the
orchestrator: a sized path full, the events past their cap never read) is cut the same way: the
lab's services failed at something the lab did not ask about, or said things chaos never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import ABSTAINED
from chaos.histories.store import StoredRun

__all__ = ["CHECKER", "Checks", "check_stored_run", "completeness"]

CHECKER = "complete-record"


def completeness(run: StoredRun) -> CheckResult:
    """``valid`` when the run recorded ops and reached its final reads, else ``unknown``."""
    missing: list[str] = []
    if not run.history:
        missing.append("history.jsonl holds no op: nothing was recorded")
    if not run.final:
        status = run.spec.get("status", "unknown")
        missing.append(
            f"final.json is missing or empty: the run stopped before its final reads "
            f"(spec.json status: {str(status)[:40]})"
        )
    missing.extend(failed_reads(run.final))
    missing += _abstained(run)
    missing += _silent_triggers(run)
    over = run.final.get("over_quota") if isinstance(run.final, dict) else None
    if over:
        said = [str(x)[:300] for x in over] if isinstance(over, list) else [str(over)[:300]]
        missing.append(_quota_reason(said))
    if missing:
        return CheckResult(
            checker=CHECKER,
            verdict=Verdict.UNKNOWN,
            summary="; ".join(missing) + "; a partial record cannot show the run valid",
        )
    return CheckResult(
        checker=CHECKER,
        verdict=Verdict.VALID,
        summary=f"{len(run.history)} op(s) recorded and the final state read",
    )


def failed_reads(final: object) -> list[str]:
    """Each read of the final state that failed, in words: the final reads themselves, etcd's
    record of the run (not read, or cut), a node's proxy journal left unread. A final state with
    one of these is not "the final state read" (a 2,000-deep value once failed every final read,
    and this checker still said valid)."""
    if not isinstance(final, dict):
        return []
    out = []
    if final.get("error"):
        out.append(f"the final reads failed: {str(final['error'])[:300]}")
    rec = final.get("record")
    if isinstance(rec, dict):
        if rec.get("error"):
            out.append(f"etcd's record of the run was not read: {str(rec['error'])[:300]}")
        if rec.get("truncated"):
            why = rec.get("truncated_why") or "its cap of events"
            out.append(f"etcd's record of the run was cut after {str(why)[:200]}")
    journal = final.get("journal")
    unread = journal.get("unread") if isinstance(journal, dict) else None
    if isinstance(unread, dict):
        for node, why in sorted(unread.items(), key=lambda kv: str(kv[0])):
            out.append(
                f"the etcd proxy's journal of {str(node)[:40]} was not read: {str(why)[:200]}"
            )
    return out


def _abstained(run: StoredRun) -> list[str]:
    """Each aimed fault that never found its aim (chaos.nemesis.pause.abstain): the run did not
    test what it was asked to."""
    out = []
    for op in run.history:
        extra = getattr(op, "extra", None)
        why = extra.get(ABSTAINED) if isinstance(extra, dict) else None
        if why:
            out.append(f"the {str(op.f)[:40]} fault never found its aim: {str(why)[:300]}")
    return out


def _silent_triggers(run: StoredRun) -> list[str]:
    """Each trigger the run was asked for that never fired: it tested nothing it was asked to
    (lab1's nights once ran before the arming reached the nodes under load, and the run was
    valid). Every workload, not only the ones whose scenario checker says so."""
    phrases = run.spec.get("triggers") if isinstance(run.spec, dict) else None
    if not isinstance(phrases, list) or not phrases:
        return []
    fired = set()
    for op in run.history:
        extra = getattr(op, "extra", None)
        trigger = extra.get("trigger") if isinstance(extra, dict) else None
        if isinstance(trigger, dict):
            fired.add(str(trigger.get("phrase", "")).strip())
    return [
        f"the trigger '{str(ph)[:120]}' never fired: the run tested nothing it was asked to"
        for ph in phrases
        if str(ph).strip() not in fired
    ]


def _quota_reason(breaches: list[str]) -> str:
    paths = [b for b in breaches if not b.startswith("the code under test")]
    said = [b for b in breaches if b.startswith("the code under test")]
    if paths:
        said.insert(0, "the code under test wrote more than its quota to " + ", ".join(paths))
    return "; ".join(said)


class Checks(Protocol):
    """What judging a stored run asks of a workload: its checkers (the ``check`` of
    :class:`chaos.core.workload.Workload`, a pure function of the stored run that must not touch a
    cluster)."""

    def check(self, run: StoredRun) -> Sequence[CheckResult]: ...


def check_stored_run(workload: Checks, run: StoredRun) -> list[CheckResult]:
    """The workload's checkers on ``run``, then :func:`completeness`, which the workload cannot
    leave out (``chaos check`` and the orchestrator both judge a run this way)."""
    results: list[CheckResult] = list(workload.check(run))
    results.append(completeness(run))
    return results
