"""``scenario-fired``: a seed scenario counts only if its fault verifiably fired, by what the
orchestrator saw itself (chaos.workloads.lab3.confirm); the service's claim and events are only
where to look. A firing the host cannot confirm is unknown, never valid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaos.checkers.journal import Write
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import Op
from chaos.workloads.lab3 import confirm, keys
from chaos.workloads.lab3.model import Lab3Run
from chaos.workloads.lab3.points import FAULT_POINTS


def _heal_value(history: Sequence[Op], point: str) -> dict[str, Any] | None:
    """What the fault point's heal found (node, pid, fired_at, at_fire, restarted_pid)."""
    found = None
    for op in history:
        if (
            op.f == f"heal-{point}"
            and op.extra.get("phase") == "heal"
            and isinstance(op.value, dict)
        ):
            found = op.value  # the completion comes after the invoke: keep the last
    return found


def _injected(run: Lab3Run) -> list[Write]:
    """The transactions the nodes' etcd proxies failed on the orchestrator's arming."""
    journal = run.journal
    return [w for w in journal.writes if w.outcome == "injected"] if journal else []


def _committed_again(run: Lab3Run, failed: Write) -> Write | None:
    """The first journaled write after ``failed`` that wrote one of its task's own keys (dedup
    record, result: the counter is every task's)."""
    own = {k for k, _, _ in (*failed.puts, *failed.maybe)}
    own = {k for k in own if k.startswith((keys.DEDUP_PREFIX, keys.RESULTS_PREFIX))}
    journal = run.journal
    if not own or journal is None or failed.time is None:
        return None
    later = [
        w for w in journal.writes
        if w.wrote and w.time is not None and w.time > failed.time
        and any(k in own for k, _, _ in w.puts)
    ]  # fmt: skip
    return min(later, key=lambda w: w.time or 0.0, default=None)


def _keys(w: Write) -> str:
    keys = sorted({k for k, _, _ in (*w.puts, *w.maybe)})
    return ", ".join(keys[:4]) + (f" (and {len(keys) - 4} more)" if len(keys) > 4 else "")


def _proof(point: str, fired: dict[str, Any], run: Lab3Run) -> tuple[bool, str]:
    """Whether the orchestrator's own observations confirm the point fired, and how (see
    chaos.workloads.lab3.confirm: the claim is the service's word, none of this is)."""
    final = run.final or {}
    if point in ("relay-crash-before-publish", "worker-crash-before-ack"):
        return _crash_proof(point, fired, final)
    if point == "lost-publish-ack":
        # copies of one event, read by chaos, never a message count any client can raise
        return confirm.republished(fired, final)
    if point == "lost-create-response":
        return _unanswered_create(run, fired.get("node"))
    if point in ("txn-error-complete", "txn-error-create"):
        # the node's etcd proxy failed the transaction, and its root-owned journal says so
        injected = _injected(run)
        if not injected:
            return False, f"no etcd proxy journaled a transaction it failed for {point}"
        w = injected[0]
        how = f"the etcd proxy on {w.node} failed a transaction writing {_keys(w)} (journal)"
    if point == "txn-error-complete":
        # and the failed work done again: a later write of the same task's dedup or result keys,
        # journaled by a proxy. Never the consumer's delivery count: a NAK by any client of the
        # consumer raises it, with no redelivery of the failed commit's task
        again = _committed_again(run, w)
        if again is None:
            return False, (
                f"{how}; no later write of its task's dedup or result keys was journaled (the "
                "failed commit's task was not committed again)"
            )
        return True, (
            f"{how}; its task was committed again at revision {again.revision} by {again.node} "
            "(journal)"
        )
    if point == "txn-error-create":
        # and the orchestrator's own client: a create answered with a server error, retried
        for op in run.history:
            tries = op.extra.get("retried") if op.f == "create" else None
            for t in tries if isinstance(tries, list) else []:
                if isinstance(t, dict) and str(t.get("error", "")).startswith("HTTP 5"):
                    return (
                        True,
                        f"{how}; the client's create on {t.get('node')} got {t.get('error')}",
                    )
        return False, f"{how}; but no create in the history got a server error"
    return False, f"no way to confirm {point} is known"


def _crash_proof(point: str, fired: dict[str, Any], final: Mapping[str, Any]) -> tuple[bool, str]:
    """A crash point: the host saw the process die, and the state it left is the point's."""
    crashed, died = confirm.host_crash(fired)
    if point == "relay-crash-before-publish":
        held, state = confirm.unpublished_intent(fired)
        return crashed and held, f"{died}; {state}"
    order, state = confirm.split_delivery(fired)
    if order is None:
        return False, f"{died}; {state}"
    if order == "ack-first":
        # ACKed, never committed: if the killed process held it, nothing is left to redeliver
        # and it never completes; completed later, its holder was another process
        held, after = confirm.still_uncommitted(fired, final)
        return crashed and held, f"{died}; {state}; {after}"
    # committed and not ACKed: the broker itself must have delivered it again after the kill
    again, made, messages = confirm.redelivered(final)
    return crashed and again, (
        f"{died}; {state}; the broker made {made} deliveries of {messages} message(s), "
        f"{max(0, made - messages)} of them redeliveries"
    )


def _unanswered_create(run: Lab3Run, node: Any) -> tuple[bool, str]:
    """The orchestrator's own client: a create attempt on ``node`` went unanswered."""
    for op in run.history:
        tries = op.extra.get("retried") if op.f == "create" else None
        for t in tries if isinstance(tries, list) else []:
            if isinstance(t, dict) and t.get("node") == node:
                task = op.value.get("task_id") if isinstance(op.value, dict) else None
                return True, (
                    f"the client's create of {task} on {t.get('node')} got no answer "
                    f"({t.get('error')}) and was retried on {op.extra.get('node')}"
                )
    return False, f"no create sent to {node} went unanswered in the history"


def scenario_fired(run: Lab3Run) -> CheckResult:
    """A seed scenario counts only if its fault verifiably fired, by what the orchestrator saw
    itself: its own kill and the exit it watched, the state it read from etcd and the broker when
    the point was claimed, the broker's own counts. The service's claim and events are only
    where to look; a firing the host cannot confirm is unknown, never valid."""
    name = "scenario-fired"
    points = [n for n in run.spec.get("nemesis") or [] if n in FAULT_POINTS]
    phrases = [str(ph) for ph in run.spec.get("triggers") or []]
    fired_phrases = {
        str(op.extra["trigger"].get("phrase"))
        for op in run.history
        if isinstance(op.extra.get("trigger"), dict)
    }
    # a trigger that never fired tested nothing (a hostile solution can hide the point it
    # reaches by deleting the events that announce it): the run cannot count as valid
    silent = [ph for ph in phrases if ph.strip() not in fired_phrases]
    if silent and not points:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="the run does not count: the trigger "
            + ", ".join(repr(ph) for ph in silent)
            + " never fired, so the fault it asks for never happened",
        )
    if not points:
        return CheckResult(
            checker=name, verdict=Verdict.VALID, summary="no seed scenario in this run"
        )
    unconfirmed: list[str] = [f"the trigger {ph!r} never fired" for ph in silent]
    evidence: list[dict[str, Any]] = []
    for point in points:
        fired = _heal_value(run.history, point)
        if fired and fired.get("refused"):
            unconfirmed.append(f"{point}: the host refused its claim: {fired['refused']}")
            continue
        if not fired or fired.get("fired_at") is None:
            unconfirmed.append(f"{point} never fired (no process reached it before the run ended)")
            continue
        ok, how = _proof(point, fired, run)
        evidence.append({"point": point, "confirmed": ok, "how": how, **fired})
        if not ok:
            unconfirmed.append(f"{point} reported firing at {fired['fired_at']} s, but {how}")
    if unconfirmed:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="the scenario does not count: " + "; ".join(unconfirmed),
            anomalies=evidence,
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary="; ".join(f"{e['point']} fired at {e['fired_at']} s: {e['how']}" for e in evidence),
        stats={"points": points},
    )
