"""lab1 checkers on hand-written runs: each has a run that must pass and one that must fail for the
named reason."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from chaos.checkers.verdict import CheckResult, ModelChecker, Verdict
from chaos.histories.ops import Event, Op, OpType
from chaos.workloads.lab1 import checkers, keys
from chaos.workloads.lab1.keys import change_amount
from chaos.workloads.lab1.model import Lab1Run
from tests.fixtures.model_facts import counting, facts_of

PID = {"n1": 101, "n2": 102, "n3": 103}


def ev(t: float, node: str, kind: str, **data: Any) -> Event:
    return Event(time=t, node=node, component="orders", kind=kind, pid=PID[node], data=data)


def pause_ops(
    node: str,
    start: float,
    end: float | None,
    *,
    as_list: bool = False,
    trigger: str | None = None,
) -> list[Op]:
    target: Any = {"node": node, "process": "orders", "pid": PID[node], "signal": "SIGSTOP"}
    if as_list:
        target = [target]
    ops: list[Op] = []
    phases = [("start", start)] + ([("heal", end)] if end is not None else [])
    for phase, t in phases:
        for typ in (OpType.INVOKE, OpType.INFO):
            ops.append(
                Op(
                    index=len(ops),
                    time=t,
                    process="nemesis",
                    type=typ,
                    f="pause",
                    value=target,
                    extra={
                        "fault": "pause",
                        "phase": phase,
                        "fault_id": 7,
                        **({"trigger": {"kind": trigger}} if trigger else {}),
                    },
                )
            )
    return ops


def job(
    node: str,
    token: int,
    night: int,
    t: float,
    orders: list[str],
    outcome: str = "applied",
    ttl: float = 1.2,
) -> list[Event]:
    out = [
        ev(t, node, "lock-acquired", token=token, night=night, ttl=ttl, until=1e9),
        ev(t + 0.01, node, "job-start", token=token, night=night, orders=orders),
    ]
    for i, o in enumerate(orders):
        out.append(
            ev(
                t + 0.1 * (i + 1),
                node,
                "write",
                order=o,
                night=night,
                token=token,
                outcome=outcome,
                amount=change_amount(o, night),
            )
        )
    end = t + 0.1 * (len(orders) + 1)
    out.append(ev(end, node, "job-end", token=token, night=night, outcome="done"))
    out.append(ev(end + 0.01, node, "lock-released", token=token, night=night))
    return out


def final_of(
    apps: list[tuple[str, int, int, str]],
    nights_done: list[int],
    limit: int,
    orders: tuple[str, ...] = ("o1", "o2"),
) -> dict[str, Any]:
    """``apps``: (order, night, token, node) in the order the store applied them."""
    rows: dict[str, Any] = {
        o: {"balance": 0, "last_token": 0, "night": 0, "applied": []} for o in orders
    }
    txns: list[dict[str, Any]] = []
    for rev, (o, n, tok, node) in enumerate(apps, start=10):
        row = rows[o]
        amount = change_amount(o, n)
        row["applied"].append(
            {"night": n, "token": tok, "node": node, "amount": amount, "rev": rev}
        )
        row["balance"] += amount
        row["last_token"] = tok
        row["night"] = n
        # etcd's record of the same writes: the row and its application in one transaction
        app = {"order": o, "night": n, "token": tok, "amount": amount, "node": node, "at": 0.0}
        puts = {
            keys.order(o): {"order": o, "balance": row["balance"], "last_token": tok, "night": n},
            keys.applied(o, n, tok, node, f"{rev:08x}"): app,
        }
        txns.append({"revision": rev, "puts": puts, "deletes": []})
    # each write as its node's etcd proxy journaled it (chaos.node.etcd_proxy)
    entries = [
        {"node": node, "seq": rev, "method": "KV/Txn", "outcome": "ok", "revision": rev,
         "succeeded": True, "puts": [{"key": f"/lab1/orders/{o}", "value": "{}", "lease": 0}],
         "deletes": []}
        for rev, (o, _n, _tok, node) in enumerate(apps, start=10)
    ]  # fmt: skip
    return {
        "config": {"order_ids": list(orders), "nights": limit},
        "orders": rows,
        "nights_done": nights_done,
        "nights": {str(n): {"night": n} for n in nights_done},
        "record": {
            "source": "etcd",
            "prefix": keys.PREFIX,
            "from_revision": 10,
            "to_revision": 10 + len(txns),
            "txns": txns,
            "error": None,
            "truncated": False,
        },
        "journal": {"source": "etcd-proxy", "entries": entries, "problems": [], "nodes": {}},
    }


def judge(
    fn: ModelChecker[Lab1Run], history: list[Op], events: list[Event], final: Any
) -> CheckResult:
    """One checker on the model of a hand-written run."""
    return fn(checkers.model_of(history, events, final))


def results(history: list[Op], events: list[Event], final: Any) -> dict[str, Any]:
    return {r.checker: r for r in checkers.check(history, events, final)}


# ---------------------------------------------------------------- runs


def calm_run() -> tuple[list[Op], list[Event], dict[str, Any]]:
    events = job("n1", 1, 1, 1.0, ["o1", "o2"]) + job("n2", 2, 2, 2.0, ["o1", "o2"])
    final = final_of(
        [("o1", 1, 1, "n1"), ("o2", 1, 1, "n1"), ("o1", 2, 2, "n2"), ("o2", 2, 2, "n2")], [1, 2], 2
    )
    return [], events, final


def paused_run(fenced: bool) -> tuple[list[Op], list[Event], dict[str, Any]]:
    """n1 acquires night 1 at 1.0 s and is paused 1.1 to 4.0 s; n2 takes over at 2.5 s (n1's lease
    ran to 2.2 s) and runs night 1; n1 resumes and writes o1 with its old token."""
    history = pause_ops("n1", 1.1, 4.0)
    events = [ev(1.0, "n1", "lock-acquired", token=1, night=1, ttl=1.2, until=1e9)]
    events += job("n2", 2, 1, 2.5, ["o1", "o2"])
    events.append(ev(4.01, "n1", "job-start", token=1, night=1, orders=["o1", "o2"]))
    apps = [("o1", 1, 2, "n2"), ("o2", 1, 2, "n2")]
    if fenced:
        events.append(
            ev(4.05, "n1", "write", order="o1", night=1, token=1, outcome="rejected-stale")
        )
        events.append(
            ev(4.06, "n1", "job-end", token=1, night=1, outcome="aborted", reason="rejected-stale")
        )
    else:
        for i, o in enumerate(["o1", "o2"]):
            events.append(
                ev(4.05 + 0.1 * i, "n1", "write", order=o, night=1, token=1, outcome="applied")
            )
            apps.append((o, 1, 1, "n1"))
        events.append(ev(4.3, "n1", "job-end", token=1, night=1, outcome="done"))
    events += job("n3", 3, 2, 5.0, ["o1", "o2"])
    apps += [("o1", 2, 3, "n3"), ("o2", 2, 3, "n3")]
    return history, sorted(events, key=lambda e: e.time), final_of(apps, [1, 2], 2)


# ---------------------------------------------------------------- no-double-apply


def test_calm_run_is_valid_everywhere() -> None:
    res = results(*calm_run())
    assert {k: r.verdict for k, r in res.items()} == dict.fromkeys(res, Verdict.VALID)
    assert "No replica was paused" in res["unsafe-lease"].summary
    assert res["no-double-apply"].stats["applications"] == 4


def test_fenced_pause_is_valid_and_names_the_rejected_write() -> None:
    res = results(*paused_run(fenced=True))
    assert {k: r.verdict for k, r in res.items()} == dict.fromkeys(res, Verdict.VALID)
    assert res["stale-writes"].summary == (
        "1 stale write was rejected by the fencing token: n1 with token 1 on o1 of night 1 at "
        "4.05 s."
    )
    assert res["stale-writes"].stats["rejected_writes"][0]["order"] == "o1"


def test_unfenced_pause_is_a_double_apply_with_both_writes_as_evidence() -> None:
    res = results(*paused_run(fenced=False))
    r = res["no-double-apply"]
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "Order o1 of night 1 was applied twice: by n2 with token 2 at 2.60 s, and by n1 with "
        "token 1 at 4.05 s after n1 was paused (1.10 s to 4.00 s)"
    )
    assert r.stats["applied_twice"] == 2
    a = r.anomalies[0]
    assert [(x["node"], x["token"]) for x in a["applications"]] == [("n2", 2), ("n1", 1)]
    assert a["balance"] == 2 * a["expected_balance"] - change_amount("o1", 2)


def test_double_apply_is_found_in_the_final_state_even_without_events() -> None:
    history, events, final = paused_run(fenced=False)
    silent = [e for e in events if not (e.node == "n1" and e.kind == "write")]
    r = judge(checkers.no_double_apply, history, silent, final)
    assert r.verdict is Verdict.INVALID
    assert "by n1 with token 1 at an unknown time" in r.summary


def test_without_final_state_events_can_still_prove_a_double_apply() -> None:
    history, events, _ = paused_run(fenced=False)
    assert judge(checkers.no_double_apply, history, events, None).verdict is Verdict.INVALID
    history, events, _ = paused_run(fenced=True)
    assert judge(checkers.no_double_apply, history, events, None).verdict is Verdict.UNKNOWN


# ---------------------------------------------------------------- stale writes


def test_stale_write_accepted_by_the_store_is_invalid() -> None:
    history, events, final = paused_run(fenced=False)
    r = judge(checkers.stale_writes, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "Order o1 accepted a stale write: n1 wrote night 1 with token 1 at 4.05 s after n2 had "
        "written token 2 at 2.60 s"
    )
    assert r.anomalies[0]["kind"] == "stale-write-accepted"


def test_reused_token_is_invalid() -> None:
    events = job("n1", 1, 1, 1.0, ["o1", "o2"]) + job("n2", 1, 2, 2.0, ["o1", "o2"])
    final = final_of(
        [("o1", 1, 1, "n1"), ("o2", 1, 1, "n1"), ("o1", 2, 1, "n2"), ("o2", 2, 1, "n2")], [1, 2], 2
    )
    r = judge(checkers.stale_writes, [], events, final)
    assert r.verdict is Verdict.INVALID
    assert "two grants got fencing token 1: n1 at 1.00 s and n2 at 2.00 s" in r.summary.lower()


def test_no_stale_write_attempted() -> None:
    r = judge(checkers.stale_writes, *calm_run())
    assert r.verdict is Verdict.VALID and r.stats["rejected"] == 0
    assert r.summary.startswith("No stale write was attempted")


# ---------------------------------------------------------------- every night


def test_lost_night_is_invalid() -> None:
    history, events, final = calm_run()
    final["config"]["nights"] = 3
    events = [*events, ev(3.0, "n3", "lock-acquired", token=3, night=3, ttl=1.2)]
    r = judge(checkers.every_night, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert r.summary == (
        "Night 3 was never reconciled (started by n3 with token 3 at 3.00 s, never finished)."
    )


def test_night_marked_done_with_a_change_missing_is_invalid() -> None:
    history, events, final = calm_run()
    final["orders"]["o2"]["applied"] = final["orders"]["o2"]["applied"][:1]
    final["orders"]["o2"]["balance"] = change_amount("o2", 1)
    r = judge(checkers.every_night, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert "Night 2 is marked done but order o2 never got its change for it" in r.summary


def test_lost_update_is_invalid() -> None:
    history, events, final = calm_run()
    final["orders"]["o1"]["balance"] -= 1
    r = judge(checkers.every_night, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["kind"] == "update-lost"


def test_open_ended_run_accepts_a_night_in_progress() -> None:
    history, events, final = calm_run()
    final["config"]["nights"] = 0
    events = [*events, ev(3.0, "n3", "lock-acquired", token=3, night=3, ttl=1.2)]
    r = judge(checkers.every_night, history, events, final)
    assert r.verdict is Verdict.VALID
    assert "night 3 was still running at the end" in r.summary


# ---------------------------------------------------------------- overlap


def test_overlap_is_evidence_not_a_violation() -> None:
    res = results(*paused_run(fenced=True))
    r = res["overlapping-holders"]
    assert r.verdict is Verdict.VALID
    assert r.anomalies[0]["paused"] == ["n1"]
    assert r.summary.startswith(
        "Replicas n1 (token 1) and n2 (token 2) were both inside the job from 2.50 s to 2.80 s, "
        "n1 while paused"
    )
    assert not judge(checkers.overlapping_holders, *calm_run()).anomalies


# ---------------------------------------------------------------- the unsafe-lease timeline


def test_timeline_told_when_the_fence_holds() -> None:
    r = judge(checkers.unsafe_lease, *paused_run(fenced=True))
    assert r.verdict is Verdict.VALID
    story = r.anomalies[0]
    assert story["outcome"] == "rejected"
    assert story["lease_expired"] == 2.2 and story["early_takeover"] is False
    assert r.summary == (
        "Unsafe-lease timeline survived: n1 acquired the lock (token 1) at 1.00 s and was stopped "
        "at 1.10 s; its lease expired at 2.20 s; n2 acquired it (token 2) at 2.50 s and wrote o1 "
        "at 2.60 s; n1 resumed at 4.00 s; its write of o1 with token 1 at 4.05 s was rejected "
        "as stale."
    )
    assert len(story["steps"]) == 6


def test_timeline_is_invalid_when_the_stale_write_lands() -> None:
    r = judge(checkers.unsafe_lease, *paused_run(fenced=False))
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["outcome"] == "applied-twice"
    assert "was APPLIED although n2 had applied it with token 2 at 2.60 s" in r.summary


def test_a_stale_write_whose_answer_was_lost_is_judged_by_the_store() -> None:
    """The resumed holder's write timed out in its client (its answer held past the client's
    deadline, as the etcd proxy's write points do) but landed: the store shows it applied twice,
    whatever the service reported. A timed-out write the store does not show stays harmless."""
    history, events, final = paused_run(fenced=False)
    lost = [
        ev(e.time, e.node, e.kind, **{**e.data, "outcome": "unknown"})
        if e.kind == "write" and e.node == "n1"
        else e
        for e in events
    ]
    r = judge(checkers.unsafe_lease, history, lost, final)
    assert r.verdict is Verdict.INVALID, r.summary
    assert r.anomalies[0]["outcome"] == "applied-twice"
    _, fenced_events, fenced_final = paused_run(fenced=True)
    timed_out = [
        ev(e.time, e.node, e.kind, **{**e.data, "outcome": "unknown"})
        if e.kind == "write" and e.node == "n1"
        else e
        for e in fenced_events
    ]
    r = judge(checkers.unsafe_lease, history, timed_out, fenced_final)
    assert r.verdict is Verdict.VALID, r.summary
    assert "and no change was applied twice" in r.summary


def test_timeline_accepts_the_nemesis_target_list_shape() -> None:
    history, events, final = paused_run(fenced=False)
    history = pause_ops("n1", 1.1, 4.0, as_list=True)
    assert judge(checkers.unsafe_lease, history, events, final).verdict is Verdict.INVALID


def test_pause_without_takeover_is_unknown() -> None:
    history, events, final = calm_run()
    history = pause_ops("n1", 1.05, 1.3)  # shorter than the lease: nobody takes over
    r = judge(checkers.unsafe_lease, history, events, final)
    assert r.verdict is Verdict.UNKNOWN
    assert "no other replica acquired it while n1 acted on it" in r.summary


def test_pause_of_a_replica_without_the_lock_is_unknown() -> None:
    _, events, final = calm_run()
    r = judge(checkers.unsafe_lease, pause_ops("n3", 1.05, 1.3), events, final)
    assert r.verdict is Verdict.UNKNOWN
    assert "did not hold the lock" in r.summary


def test_an_aimed_stop_outside_the_lab_scenario_is_judged_by_what_it_did_not_unknown() -> None:
    # a trigger (or chaos explore) chose the moment: a replica without the lock, or a holder
    # stopped shorter than its lease, is not "the lab's test did not test" but a valid run
    _, events, final = calm_run()
    r = judge(
        checkers.unsafe_lease, pause_ops("n3", 1.05, 1.3, trigger="txn-before"), events, final
    )
    assert r.verdict is Verdict.VALID
    assert "A trigger stopped n3 at its txn-before point" in r.summary
    assert "did not hold the lock then" in r.summary
    held = judge(checkers.unsafe_lease, pause_ops("n1", 1.05, 1.3, trigger="write"), events, final)
    assert held.verdict is Verdict.VALID
    assert "held it, and its timeline was not completed" in held.summary
    # the same stops from the random nemesis stay unknown (above), and an aimed stop that ends
    # in a double apply is invalid like any other
    assert judge(checkers.unsafe_lease, pause_ops("n3", 1.05, 1.3), events, final).verdict is (
        Verdict.UNKNOWN
    )
    _, events, final = paused_run(fenced=False)
    aimed = pause_ops("n1", 1.1, 4.0, trigger="write")
    assert judge(checkers.unsafe_lease, aimed, events, final).verdict is Verdict.INVALID


def test_zombie_that_reaches_an_order_first_is_harmless() -> None:
    # n1 resumes while n2 is still running night 1 and applies o2 before n2 gets there; n2 then
    # finds o2 already reconciled: applied once, by the stale holder, and no harm done
    history = pause_ops("n1", 1.1, 2.55)
    events = [
        ev(1.0, "n1", "lock-acquired", token=1, night=1, ttl=1.2),
        ev(2.5, "n2", "lock-acquired", token=2, night=1, ttl=1.2),
        ev(2.51, "n2", "job-start", token=2, night=1, orders=["o1", "o2"]),
        ev(2.6, "n2", "write", order="o1", night=1, token=2, outcome="applied"),
        ev(2.62, "n1", "write", order="o2", night=1, token=1, outcome="applied"),
        ev(2.7, "n2", "write", order="o2", night=1, token=2, outcome="already-applied"),
        ev(2.8, "n2", "job-end", token=2, night=1, outcome="done"),
    ]
    final = final_of([("o1", 1, 2, "n2"), ("o2", 1, 1, "n1")], [1], 1)
    res = results(history, events, final)
    assert {k: r.verdict for k, r in res.items()} == dict.fromkeys(res, Verdict.VALID)
    assert res["unsafe-lease"].anomalies[0]["outcome"] == "harmless"


# ---------------------------------------------------------------- robustness


def test_a_malformed_final_state_makes_a_checker_unknown_not_a_crash() -> None:
    history, events, final = calm_run()
    bad = copy.deepcopy(final)
    bad["orders"]["o1"]["applied"] = [{"night": "x"}]
    res = results(history, events, bad)
    assert len(res) == len(checkers.CHECKERS)
    assert res["no-double-apply"].verdict is Verdict.UNKNOWN
    assert "crashed" in res["no-double-apply"].summary
    assert res["overlapping-holders"].verdict is Verdict.VALID


def test_a_balance_chaos_computes_wrong_is_invalid_whatever_the_log_says() -> None:
    # the solution applied o2's night-2 change twice but logged it once, and its log and balance
    # agree with each other — only the sum chaos computes from the nights tells
    history, events, final = calm_run()
    extra = change_amount("o2", 2)
    final["orders"]["o2"]["balance"] += extra
    final["orders"]["o2"]["applied"][-1]["amount"] += extra
    r = judge(checkers.every_night, history, events, final)
    assert r.verdict is Verdict.INVALID
    (b,) = [a for a in r.anomalies if a["kind"] == "balance"]
    assert b["order"] == "o2" and b["balance"] - b["expected"] == extra
    assert f"{extra} more than the 2 nights' changes: a change was applied twice" in r.summary
    _, _, ok = calm_run()
    assert judge(checkers.every_night, history, events, ok).verdict is Verdict.VALID


# ---------------------------------------------------------------- issue 11: the true cause


def lock_version(rev: int, node: str, token: int, locked_at: float, until: float) -> dict[str, Any]:
    return {
        "name": "reconciliation",
        "locked_by": node,
        "token": token,
        "locked_at": locked_at,
        "lock_until": until,
        "rev": rev,
    }


def test_a_check_builds_the_runs_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # every checker reads grants (7 of them recomputed them, O(n²) each, before the model); the
    # stops and the clock shifts are read from one computation of the fault intervals
    from chaos.checkers.faults import fault_intervals
    from chaos.checkers.journal import read_journal
    from chaos.workloads.lab1 import model

    derivations: list[Callable[..., Any]] = [
        fault_intervals, model.grants_of, model.applications, model.lock_grants, model.stops_in,
        model.clock_shifts, read_journal,
    ]  # fmt: skip
    counts = counting(monkeypatch, model.Lab1Run, derivations, "chaos.workloads.lab1")
    history, events, final = paused_run(fenced=False)
    final["lock_history"] = calm_lock_history()
    res = results(history, events, final)
    assert not [r.summary for r in res.values() if "crashed" in r.summary]
    assert res["unsafe-lease"].verdict is Verdict.INVALID  # the model was read, not bypassed
    assert counts.facts == dict.fromkeys(facts_of(model.Lab1Run), 1), counts.facts
    assert counts.calls == {f.__qualname__: 1 for f in derivations}, counts.calls


def calm_lock_history() -> list[dict[str, Any]]:
    # n1 takes token 1 at 100.0 (lease to 103.0) and releases it at 100.3; n2 takes token 2 at
    # 100.5 and releases at 100.8
    return [
        lock_version(3, "n1", 1, 100.0, 103.0),
        lock_version(9, "n1", 1, 100.0, 100.3),
        lock_version(10, "n2", 2, 100.5, 103.5),
        lock_version(16, "n2", 2, 100.5, 100.8),
    ]


def test_lease_exclusivity_is_valid_when_each_grant_begins_after_the_last_lease() -> None:
    history, events, final = calm_run()
    final["lock_history"] = calm_lock_history()
    r = judge(checkers.lease_exclusivity, history, events, final)
    assert r.verdict is Verdict.VALID
    assert "each of 2 grants began after every earlier lease's lock_until" in r.summary
    assert "by the lock record's own times" in r.summary


def test_lease_exclusivity_names_both_grants_of_an_acquire_without_compare() -> None:
    # n2 read the expired record before n1's grant of token 2, was stopped, and then wrote its
    # own grant unconditionally over n1's live lease, with the token it computed (2 again)
    history, events, final = calm_run()
    final["lock_history"] = [
        *calm_lock_history()[:3],
        lock_version(12, "n3", 2, 100.4, 103.4),
    ]
    r = judge(checkers.lease_exclusivity, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "Two grants held the lock at once: n3's grant of token 2 (rev 12) was locked at "
        "100.400 on the record's clock, 3.10 s before the lease of n2's grant of token 2 "
        "(rev 10) ended (103.500 on the record's clock), by the lock record's own times"
    )
    (a,) = r.anomalies
    assert [(g["node"], g["rev"]) for g in a["grants"]] == [("n2", 10), ("n3", 12)]
    # and stale-writes names the token granted twice, in the record's order
    s = judge(checkers.stale_writes, history, events, final)
    assert s.verdict is Verdict.INVALID
    assert "two grants got fencing token 2: n2's grant of token 2 (rev 10" in s.summary.lower()


def test_lease_exclusivity_without_the_record_history_uses_the_reported_grants() -> None:
    history, _, final = calm_run()
    events = [
        ev(1.0, "n1", "lock-acquired", token=1, night=1, ttl=3.0, until=103.0, locked_at=100.0),
        ev(1.2, "n2", "lock-acquired", token=2, night=2, ttl=3.0, until=103.2, locked_at=100.2),
    ]
    r = judge(checkers.lease_exclusivity, history, events, final)
    assert r.verdict is Verdict.INVALID and "by the times the grants reported" in r.summary
    assert "≈1.20 s" in r.summary  # placed in the run through the grants' until - ttl
    released = ev(1.1, "n1", "lock-released", token=1, night=1, until=100.15)
    ok = [events[0], released, events[1]]
    assert judge(checkers.lease_exclusivity, history, ok, final).verdict is Verdict.VALID


def test_a_renewal_after_another_replica_took_the_lock_is_invalid() -> None:
    history, events, final = paused_run(fenced=True)
    renewed = ev(4.02, "n1", "lock-renewed", token=1, night=1)
    r = judge(
        checkers.lease_exclusivity, history, sorted([*events, renewed], key=lambda e: e.time), final
    )
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "A renewal after losing the lock: n1 renewed its lease (token 1) at 4.02 s although n2 "
        "had acquired the lock (token 2) at 2.50 s"
    )
    # the holder's own renewal, before anyone else acquired: fine
    own = ev(1.05, "n1", "lock-renewed", token=1, night=1)
    r = judge(
        checkers.lease_exclusivity, history, sorted([*events, own], key=lambda e: e.time), final
    )
    assert r.verdict is Verdict.VALID and "1 renewal(s), each by the holder" in r.summary


def _journaled(
    final: dict[str, Any], node: str, rev: int, t: float, record: dict[str, Any]
) -> None:
    """A write of the lock record as ``node``'s etcd proxy journaled it at run time ``t``."""
    final["journal"]["entries"].append(
        {"node": node, "seq": 100 + rev, "method": "KV/Txn", "outcome": "ok", "revision": rev,
         "succeeded": True, "time": t, "deletes": [],
         "puts": [{"key": "/lab1/locks/reconciliation", "value": json.dumps(record), "lease": 0}]}
    )  # fmt: skip


def test_a_renewal_is_placed_by_its_transactions_revision_not_by_when_it_was_reported() -> None:
    # n1 renewed (its extend's transaction wrote rev 5, as n1's proxy journaled it) and was
    # stopped before it could say so; n2 took the lock at rev 10; n1's report of the renewal came
    # at 4.02 s. By etcd's order the renewal came first: no renewal after losing the lock (the
    # reference's false alarm, issue 11)
    history, events, final = paused_run(fenced=True)
    final["lock_history"] = [
        lock_version(3, "n1", 1, 100.0, 101.2),
        lock_version(5, "n1", 1, 100.0, 101.3),
        lock_version(10, "n2", 2, 101.5, 104.5),
    ]
    _journaled(final, "n1", 5, 1.05, {"token": 1, "locked_by": "n1"})
    late = ev(4.02, "n1", "lock-renewed", token=1, night=1)
    # the service's own trace claims the renewal at rev 12: its word, not evidence
    forged = ev(4.01, "n1", "txn", fn="extend", n=1, ok=True, rev=12)
    got = sorted([*events, forged, late], key=lambda e: e.time)
    r = judge(checkers.lease_exclusivity, history, got, final)
    assert r.verdict is Verdict.VALID, r.summary
    # the journal has the renewal's transaction at rev 12 (after n2's grant): it renewed n2's
    # lease, writing n2's own record back with a later lock_until (renew-without-check)
    _journaled(final, "n1", 12, 4.01, {"token": 2, "locked_by": "n2"})
    honest = ev(1.05, "n1", "txn", fn="extend", n=1, ok=True, rev=5)
    got = sorted([*events, honest, late], key=lambda e: e.time)
    r = judge(checkers.lease_exclusivity, history, got, final)
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "A renewal after losing the lock: n1 renewed its lease (token 1) at 4.02 s although n2 "
        "had acquired the lock (token 2) at rev 10, before the renewal's rev 12"
    )


def test_a_token_granted_again_to_the_same_replica_is_invalid() -> None:
    # issue 11: one replica took every later night and kept its token; the old rule looked only
    # at grants of different replicas
    events = job("n1", 1, 1, 1.0, ["o1", "o2"]) + job("n1", 1, 2, 2.0, ["o1", "o2"])
    final = final_of(
        [("o1", 1, 1, "n1"), ("o2", 1, 1, "n1"), ("o1", 2, 1, "n1"), ("o2", 2, 1, "n1")], [1, 2], 2
    )
    r = judge(checkers.stale_writes, [], events, final)
    assert r.verdict is Verdict.INVALID
    assert r.summary.startswith(
        "Two grants got fencing token 1: n1 at 1.00 s and n1 at 2.00 s; a token must increase "
        "with every grant, also a re-grant to the same replica"
    )
    # in the lock record's order, when the record's history was read
    final["lock_history"] = [
        lock_version(3, "n1", 1, 100.0, 103.0),
        lock_version(9, "n1", 1, 100.0, 100.3),
        lock_version(10, "n1", 1, 100.5, 103.5),
    ]
    r = judge(checkers.stale_writes, [], events, final)
    assert r.verdict is Verdict.INVALID and r.stats["grants_from"] == "lock record"
    assert "(rev 3" in r.summary and "(rev 10" in r.summary


def test_a_token_lower_than_an_earlier_grant_is_invalid() -> None:
    _, events, final = calm_run()
    history = calm_lock_history()
    history[2]["token"] = history[3]["token"] = 3
    final["lock_history"] = [*history, lock_version(20, "n3", 2, 101.0, 104.0)]
    r = judge(checkers.stale_writes, [], events, final)
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["kind"] == "token-decreased"
    assert r.summary.startswith(
        "A token went down: n3's grant of token 2 (rev 20) came after n2's grant of token 3"
    )
    final["lock_history"] = calm_lock_history()
    assert judge(checkers.stale_writes, [], events, final).verdict is Verdict.VALID


def off_by_one_run() -> tuple[list[Op], list[Event], dict[str, Any]]:
    """issue 11's off-by-one night guard: n1 (token 1) is paused 1.1 to 2.4 s; its lease ends at
    2.2 s; n2 takes the lock (token 2) at 2.5 s, after n1 resumed; n1 writes o1 at 2.45 s, first
    in the store, then n2 applies o1 of night 1 again (the guard let the same night run)."""
    history = pause_ops("n1", 1.1, 2.4)
    events = [
        ev(1.0, "n1", "lock-acquired", token=1, night=1, ttl=1.2, until=101.2, locked_at=100.0),
        ev(1.01, "n1", "job-start", token=1, night=1, orders=["o1"]),
        ev(2.45, "n1", "write", order="o1", night=1, token=1, outcome="applied"),
        ev(2.5, "n2", "lock-acquired", token=2, night=1, ttl=1.2, until=102.7, locked_at=101.5),
        ev(2.51, "n2", "job-start", token=2, night=1, orders=["o1"]),
        ev(2.55, "n1", "job-end", token=1, night=1, outcome="done"),
        ev(2.6, "n2", "write", order="o1", night=1, token=2, outcome="applied"),
        ev(2.7, "n2", "job-end", token=2, night=1, outcome="done"),
    ]
    final = final_of([("o1", 1, 1, "n1"), ("o1", 1, 2, "n2")], [1], 1, orders=("o1",))
    final["lock_history"] = [
        lock_version(3, "n1", 1, 100.0, 101.2),
        lock_version(11, "n2", 2, 101.5, 102.7),
    ]
    return history, events, final


def test_unsafe_lease_tells_a_takeover_after_the_resume_in_the_stores_order() -> None:
    history, events, final = off_by_one_run()
    r = judge(checkers.unsafe_lease, history, events, final)
    assert r.verdict is Verdict.INVALID
    assert "no other replica acquired it" not in r.summary
    # in order of time: n1 resumed before n2 took over; n1's write came first in the store
    assert r.summary == (
        "Unsafe lease: n1 acquired the lock (token 1) at 1.00 s and was stopped at 1.10 s; its "
        "lease expired at 2.20 s; n1 resumed at 2.40 s, its lease already expired; n2 acquired "
        "it (token 2) at 2.50 s; its write of o1 of night 1 with token 1 at 2.45 s was APPLIED "
        "first, and n2 applied it again with token 2 at 2.60 s: the change was applied twice."
    )


def test_stale_writes_does_not_claim_nobody_wrote_after_losing_the_lease() -> None:
    history, events, final = off_by_one_run()
    final["lock_history"] = [
        lock_version(3, "n1", 1, 100.0, 101.2),
        lock_version(9, "n2", 2, 101.5, 102.7),  # n2's grant before n1's write (rev 10)
    ]
    r = judge(checkers.stale_writes, history, events, final)
    assert r.verdict is Verdict.VALID
    assert "no replica wrote after losing its lease" not in r.summary
    assert (
        "n1 wrote o1 of night 1 with token 1 at 2.45 s after losing the lock to n2 (token 2)"
        in r.summary
    )
    d = judge(checkers.no_double_apply, history, events, final)
    assert "after n1 was paused (1.10 s to 2.40 s) and had lost the lock to n2 (token 2)" in (
        d.summary
    )
    # not paused (a clock ahead took the lock from it): the sentence still reads
    d = judge(checkers.no_double_apply, [], events, final)
    assert "by n1 with token 1 at 2.45 s, after n1 had lost the lock to n2 (token 2)" in d.summary


def test_no_double_apply_names_the_pause_that_ended_at_the_sigcont() -> None:
    # issue 11: the write at 7.8136 s came after the SIGCONT (7.8101 s) but before the heal's
    # completion (7.814 s)
    history = pause_ops("n1", 1.1, 7.814)
    history[-2] = msgspec.structs.replace(history[-2], time=7.80)  # the heal's request
    heal = history[-1]
    history[-1] = Op(
        index=heal.index,
        time=heal.time,
        process=heal.process,
        type=heal.type,
        f=heal.f,
        value={**heal.value, "signal": "SIGCONT", "resumed_at": 7.8101},
        extra=heal.extra,
    )
    events = [
        ev(1.0, "n1", "lock-acquired", token=1, night=1, ttl=1.2, until=1e9),
        *job("n2", 2, 1, 2.5, ["o1"]),
        ev(7.8136, "n1", "write", order="o1", night=1, token=1, outcome="applied"),
    ]
    final = final_of([("o1", 1, 2, "n2"), ("o1", 1, 1, "n1")], [1], 1, orders=("o1",))
    r = judge(checkers.no_double_apply, history, sorted(events, key=lambda e: e.time), final)
    assert "after n1 was paused (1.10 s to 7.81 s)" in r.summary
    u = judge(checkers.unsafe_lease, history, sorted(events, key=lambda e: e.time), final)
    assert u.verdict is Verdict.INVALID and "survived" not in u.summary


def test_a_stop_while_acquiring_is_not_a_paused_holder() -> None:
    _, events, final = calm_run()
    history = pause_ops("n3", 1.05, 1.3)
    history = [
        Op(
            index=o.index,
            time=o.time,
            process=o.process,
            type=o.type,
            f=o.f,
            value=o.value,
            extra={**o.extra, "trigger": {"kind": "acquire-commit", "node": "n3"}}
            if o.extra.get("phase") == "start"
            else o.extra,
        )
        for o in history
    ]
    r = judge(checkers.unsafe_lease, history, events, final)
    assert r.verdict is Verdict.VALID
    assert r.summary.startswith("n3 was stopped while acquiring the lock (1.05 s to 1.30 s)")


# ---------------------------------------------------------------- checkers that agree


def test_no_lab1_checker_contradicts_another_and_a_planted_pair_is_named() -> None:

    for run in (calm_run(), paused_run(fenced=True), paused_run(fenced=False)):
        assert checkers.contradictions(checkers.check(*run)) == []
    got = results(*paused_run(fenced=False))
    assert got["no-double-apply"].verdict is Verdict.INVALID
    assert got["unsafe-lease"].verdict is Verdict.INVALID
    # a no-double-apply that missed the double apply unsafe-lease told is caught out
    planted = dict(got)
    planted["no-double-apply"] = dataclasses.replace(got["no-double-apply"], verdict=Verdict.VALID)
    assert checkers.contradictions(list(planted.values())) == [
        "every-night found a balance above its nights' changes, yet no-double-apply found no "
        "change applied twice",
        "unsafe-lease told a change applied twice, yet no-double-apply found none",
    ]
    # and one that found it while every-night, with every night done, found every balance right
    planted = dict(got)
    planted["every-night"] = dataclasses.replace(got["every-night"], verdict=Verdict.VALID)
    assert checkers.contradictions(list(planted.values())) == [
        "no-double-apply found a change applied twice, yet every-night found every balance "
        "equal to its nights' changes"
    ]


def test_night_reruns_says_a_takeover_after_expiry_is_not_a_rerun() -> None:
    got = results(*paused_run(fenced=True))["night-reruns"]
    assert got.verdict is Verdict.VALID
    assert got.summary == (
        "No night's job ran to its end twice (2 nights); night 1 was taken over after its "
        "holder's lease had expired, which the fencing token must make safe."
    )


def test_no_function_of_lab1s_model_and_checkers_is_over_60_lines() -> None:
    # issue 24: each checker a small function over the model; this keeps them so
    import ast
    from pathlib import Path

    from chaos.workloads.lab1 import accounting, authors, model

    files = [Path(m.__file__ or "") for m in (model, accounting, authors)]
    files += sorted(Path(checkers.__file__ or "").parent.glob("*.py"))
    long = [
        f"{f.name}:{n.name} ({(n.end_lineno or 0) - n.lineno + 1} lines)"
        for f in files
        for n in ast.walk(ast.parse(f.read_text()))
        if isinstance(n, ast.FunctionDef) and (n.end_lineno or 0) - n.lineno + 1 > 60
    ]
    assert len(files) == 11 and not long, long
