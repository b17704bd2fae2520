"""Issue 11: transaction points of the code under test, the faults aimed at them, and the
checkers that name the cause (each with a case that must pass and one that must fail)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from chaos.checkers.verdict import Verdict
from chaos.histories.ops import NEMESIS, Op
from chaos.nemesis.trigger import TriggerError, bind, parse_trigger
from chaos.node.store import JsonStore
from chaos.orchestrator import explore
from chaos.workloads.lab1.workload import Lab1
from chaos.workloads.lab3 import checkers, keys
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_lab3_checkers import (
    ALL_DONE,
    AMOUNTS,
    apply,
    creates,
    ev,
    final_state,
    ops,
    record,
    run,
)

# ------------------------------------------------------------------ trigger phrases


def test_a_txn_phrase_binds_to_the_point_of_that_function_and_component() -> None:
    tr = bind(parse_trigger("kill api after txn 1 of create"), Lab3(), "lab3")
    assert tr.point is not None and tr.point.file == "hold-api-after-txn1-create"
    tr = bind(parse_trigger("pause worker before  txn 2 of complete for 3s"), Lab3(), "lab3")
    assert tr.point is not None and tr.point.file == "hold-worker-before-txn2-complete"
    assert tr.duration == 3.0
    # lab1's role word "holder" is its orders component
    tr = bind(parse_trigger("pause holder before txn 1 of acquire"), Lab1(), "lab1")
    assert tr.point is not None and tr.point.file == "hold-orders-before-txn1-acquire"
    tr = bind(parse_trigger("kill worker before txn 1 of complete 2 times"), Lab3(), "lab3")
    assert tr.times == 2


@pytest.mark.parametrize(
    ("phrase", "said"),
    [
        ("kill api after txn 1 of publish", "no function 'publish'"),
        ("kill worker after txn 1 of create", "create runs in api, not in worker"),
        ("kill api on txn 1 of create", "say 'before txn' or 'after txn'"),
        ("kill api after txn 0 of create", "numbered from 1"),
    ],
)
def test_a_txn_phrase_that_names_no_point_is_refused_with_the_reason(
    phrase: str, said: str
) -> None:
    with pytest.raises(TriggerError, match=said):
        bind(parse_trigger(phrase), Lab3(), "lab3")


# ------------------------------------------------------------------ the store's points


class _Client:
    def __init__(self) -> None:
        self.sent = 0

    def transaction(self, compare: Any, success: Any, failure: Any) -> tuple[bool, list[Any]]:
        self.sent += 1
        return True, []


class _Hooks:
    def __init__(self, armed: set[str] | None = None) -> None:
        self.log: list[str] = []
        self._armed = armed or set()

    def hold(self, kind: str, *, task_id: str | None = None, event_id: str | None = None) -> None:
        self.log.append(f"hold {kind} {task_id}")

    def txn_event(
        self, fn: str, n: int, ok: bool, task_id: str | None, rev: int | None = None
    ) -> None:
        self.log.append(f"txn {fn} {n} {ok}")

    def armed(self, point: str, *, task_id: str | None = None, event_id: str | None = None) -> bool:
        if point in self._armed:
            self._armed.discard(point)
            return True
        return False


def test_each_transaction_of_a_call_is_numbered_and_held_before_and_after() -> None:
    client, hooks = _Client(), _Hooks()
    store = JsonStore(client)
    store.set_txn_hooks(hooks)
    store.txn([], [])  # outside a solution call: the framework's own, no points
    with store.calling("complete", task_id="t1"):
        store.txn([], [])
        store.txn([], [])
    with store.calling("create"):
        store.txn([], [])  # numbering starts again with each call
    assert hooks.log == [
        "hold before-txn1-complete t1",
        "txn complete 1 True",
        "hold after-txn1-complete t1",
        "hold before-txn2-complete t1",
        "txn complete 2 True",
        "hold after-txn2-complete t1",
        "hold before-txn1-create None",
        "txn create 1 True",
        "hold after-txn1-create None",
    ]
    assert client.sent == 4


def test_a_txn_error_is_not_the_services_to_fire() -> None:
    # the service's hooks say the point is armed (a file the service user could read or forge):
    # the store sends the transaction all the same — only the node's etcd proxy fails one
    client, hooks = _Client(), _Hooks({"txn-error-complete"})
    store = JsonStore(client)
    store.set_txn_hooks(hooks)
    with store.calling("complete"):
        store.txn([], [])
    assert client.sent == 1


def _txn_writing(*keys: str) -> bytes:
    from etcd3 import etcdrpc

    ops = [etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=k.encode(), value=b"1"))
           for k in keys]  # fmt: skip
    return bytes(etcdrpc.TxnRequest(success=ops).SerializeToString())


def test_the_proxy_fails_one_transaction_of_the_armed_keys_per_arming(tmp_path: Path) -> None:
    from chaos.node.etcd_proxy import Injector

    inject = Injector(tmp_path, "n2")
    assert inject.take(_txn_writing("/lab3/results/t1")) is None  # nothing armed
    (tmp_path / "txn-error").write_text(json.dumps({"gen": "g1", "keys": ["/lab3/results/"]}))
    assert inject.take(_txn_writing("/lab3/tasks/t1")) is None  # create's keys: not this point
    assert inject.take(_txn_writing("/lab3/tasks/t1", "/lab3/results/t1")) == "g1"
    assert inject.take(_txn_writing("/lab3/results/t2")) is None  # one-shot
    note = json.loads((tmp_path / "fired-g1").read_text())
    assert note["node"] == "n2" and note["gen"] == "g1" and "/lab3/results/t1" in note["keys"]
    (tmp_path / "txn-error").write_text(json.dumps({"gen": "g2", "keys": ["/lab3/results/"]}))
    assert inject.take(_txn_writing("/lab3/results/t2")) == "g2"  # a new arming fires again


# ------------------------------------------------------------------ checkers that name the cause


def _retried_creates() -> list[Op]:
    """t1's first attempt on n1 lost its answer; the retry on n2 was answered."""
    rows = creates({"t1": "ok", "t2": "ok", "t3": "ok"})
    p, _, f, v, _ = rows[1]
    lost = [{"node": "n1", "outcome": "indeterminate", "error": "RemoteDisconnected"}]
    rows[1] = (p, "ok", f, {**v, "event_id": "e-t1-again"}, {"node": "n2", "retried": lost})
    return ops(*rows)


def _second_outbox_entry() -> dict[str, Any]:
    return {
        keys.idempotency("t1"): "e-t1-again",
        keys.outbox("e-t1-again"): {"task_id": "t1", "event_id": "e-t1-again", "amount": 2},
    }


def test_a_retried_create_that_wrote_a_second_outbox_entry_is_not_idempotent() -> None:
    rec = record(_second_outbox_entry(), apply("t1", 2), apply("t2", 5), apply("t3", 10))
    bad = checkers.idempotent_create(run(_retried_creates(), [], final_state(10, ALL_DONE, rec)))
    assert bad.verdict is Verdict.INVALID
    assert "task t1: the create wrote 2 outbox entries" in bad.summary
    assert "e-t1 at revision 2, e-t1-again at revision 5" in bad.summary
    assert "n1 (RemoteDisconnected)" in bad.summary
    # the same retry answered with the first event id, one outbox entry: valid
    history = _retried_creates()
    history[1] = msgspec.structs.replace(history[1], value={"task_id": "t1", "event_id": "e-t1"})
    good = checkers.idempotent_create(run(history, [], final_state(10, ALL_DONE)))
    assert good.verdict is Verdict.VALID, good.summary
    assert "1 retried create(s)" in good.summary


def test_a_double_apply_under_two_event_ids_is_blamed_on_the_create() -> None:
    second = {**apply("t1", 4), keys.dedup("e-t1-again"): {"task_id": "t1"}}
    rec = record(_second_outbox_entry(), apply("t1", 2), second, apply("t2", 7), apply("t3", 12))
    r = run(_retried_creates(), [], final_state(12, ALL_DONE, rec))
    res = checkers.double_apply(r)
    assert res.verdict is Verdict.INVALID
    assert "under 2 event ids: its create was not idempotent" in res.summary


def test_a_double_apply_names_whether_the_dedup_record_was_compared_or_missing() -> None:
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    # the dedup record written in both transactions: it was not compared in them
    both = record(apply("t1", 2), apply("t1", 4), apply("t2", 7), apply("t3", 12))
    res = checkers.double_apply(run(history, [], final_state(12, ALL_DONE, both)))
    assert res.verdict is Verdict.INVALID
    assert "each of those transactions wrote the dedup record" in res.summary
    # the effect applied with no dedup record in its transaction (written later, apart)
    apart = record(apply("t1", 2, dedup=False), apply("t1", 4, dedup=False), apply("t2", 7),
                   apply("t3", 12))  # fmt: skip
    res = checkers.double_apply(run(history, [], final_state(12, ALL_DONE, apart)))
    assert res.verdict is Verdict.INVALID
    assert "revision 5, 6 changed the counter without writing the dedup record" in res.summary


def test_a_lost_task_with_no_outbox_entry_in_etcds_record_says_so() -> None:
    rec = record(apply("t1", 2), apply("t3", 7))
    rec["txns"] = [t for t in rec["txns"] if keys.outbox("e-t2") not in (t.get("puts") or {})] + [
        {"revision": 99, "puts": {keys.task("t2"): {"task_id": "t2"}}, "deletes": []}
    ]
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    res = checkers.lost_tasks(run(history, [], final_state(7, done, rec)))
    assert res.verdict is Verdict.INVALID
    assert "task t2 etcd holds its task record but no outbox entry" in res.summary
    # with its outbox entry there, the same loss is not blamed on the create
    res = checkers.lost_tasks(run(history, [], final_state(7, done, record(apply("t1", 2)))))
    assert res.verdict is Verdict.INVALID and "outbox" not in res.summary


def test_a_delivery_answered_duplicate_acked_and_never_committed_names_the_swallowed_error() -> (
    None
):
    events = [
        ev(1.0, "n2", "worker", "delivery", "t2", num_delivered=1),
        ev(1.2, "n2", "worker", "suppressed", "t2", num_delivered=1),
        ev(1.3, "n2", "worker", "ack", "t2"),
    ]
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    res = checkers.lost_tasks(run(history, events, final_state(7, done)))
    assert res.verdict is Verdict.INVALID
    assert "answered 'duplicate' for its delivery on n2 at 1.20 s" in res.summary


def test_a_lost_create_response_counts_only_when_the_client_saw_it() -> None:
    heal = {"point": "lost-create-response", "node": "n1", "process": "api", "fired_at": 1.0}
    fired = ops((NEMESIS, "info", "heal-lost-create-response", heal, {"phase": "heal"}))
    spec = {"lab": "lab3", "nemesis": ["lost-create-response"]}
    seen = run([*_retried_creates(), *fired], [], final_state(10, ALL_DONE), **spec)
    res = checkers.scenario_fired(seen)
    assert res.verdict is Verdict.VALID, res.summary
    assert "create of t1 on n1 got no answer" in res.summary
    unseen = run(
        [*ops(*creates({"t1": "ok"})), *fired], [], final_state(2, {"t1": "completed"}), **spec
    )
    res = checkers.scenario_fired(unseen)
    assert res.verdict is Verdict.UNKNOWN and "went unanswered" in res.summary


# ------------------------------------------------------------------ chaos explore


def test_explore_tries_every_traced_transaction_with_every_fault_then_the_points() -> None:
    probes = explore.probes(Lab3(), {"complete": 2, "create": 1, "unknown": 3})
    labels = [p.label for p in probes]
    assert labels[:3] == [
        "kill api before txn 1 of create",
        "pause api before txn 1 of create",
        "kill api before txn 1 of create for 0.2s 2 times",
    ]
    assert "kill worker after txn 2 of complete for 0.2s 2 times" in labels
    assert "pause worker before txn 1 of complete for 1.2s" in labels  # the brief pause
    assert not any("unknown" in lb for lb in labels)
    txn_probes = [p for p in probes if p.trigger]
    assert len(txn_probes) == (1 + 2) * 2 * len(explore.FAULTS)
    assert [p.point for p in probes if p.point] == list(Lab3.fault_points)
    # every probe phrase binds to a real point of the workload
    for p in txn_probes:
        assert p.trigger is not None
        bind(parse_trigger(p.trigger), Lab3(), "lab3")


def test_a_probe_counts_as_reached_only_by_the_orchestrators_own_ops() -> None:
    trig = {"phrase": "kill api after txn 1 of create"}
    fired = ops((NEMESIS, "info", "kill", {"target": "api@n1"}, {"trigger": trig}))
    probe = explore.Probe(label=trig["phrase"], trigger=trig["phrase"])
    assert explore._reached(fired, probe)
    assert not explore._reached(ops(*creates({"t1": "ok"})), probe)
    point = explore.Probe(label="fault point txn-error-complete", point="txn-error-complete")
    heal = ops((NEMESIS, "info", "heal-txn-error-complete", {"fired_at": None}, {}))
    assert not explore._reached(heal, point)
    heal = ops((NEMESIS, "info", "heal-txn-error-complete", {"fired_at": 2.5}, {}))
    assert explore._reached(heal, point)


def test_each_probe_seed_depends_on_the_explore_seed_and_the_probe_alone() -> None:
    a = explore.probe_seed(7, "kill api after txn 1 of create")
    assert a == explore.probe_seed(7, "kill api after txn 1 of create")
    assert a != explore.probe_seed(8, "kill api after txn 1 of create")
    assert a != explore.probe_seed(7, "pause api after txn 1 of create")


def test_the_trace_reads_the_most_transactions_a_call_made(tmp_path: Path) -> None:
    from chaos.histories.store import write_json

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_json(run_dir / "spec.json", {"workload": "lab3", "status": "done"})
    (run_dir / "history.jsonl").write_text("")
    lines = [
        {"time": 1.0, "node": "n1", "component": "worker", "kind": "txn", "pid": 1,
         "data": {"fn": "complete", "n": n, "ok": True}}
        for n in (1, 2, 1)
    ] + [{"time": 1.0, "node": "n1", "component": "api", "kind": "txn", "pid": 2,
          "data": {"fn": "create", "n": True}}]  # fmt: skip
    (run_dir / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert explore.trace_txns(run_dir) == {"complete": 2}
    assert AMOUNTS  # the shared fixtures are the lab3 checkers' own


def test_lab3_options_are_checked_and_set_size_picks_the_first_tasks_of_the_set() -> None:
    from chaos.core.spec import TestSpec

    with pytest.raises(ValueError, match="lab3 has no option colour; options: set_size"):
        Lab3().preflight(TestSpec(workload="lab3", options={"colour": "red"}))
    with pytest.raises(ValueError, match="set_size=4: expected 1, 2 or 3"):
        Lab3().preflight(TestSpec(workload="lab3", options={"set_size": "4"}))
    Lab3().preflight(TestSpec(workload="lab3", options=dict(Lab3.one_task)))

    class Ctx:
        spec = TestSpec(workload="lab3", options={"set_size": "1"})

    assert Lab3().tasks(Ctx()) == [("t1", 2)]  # type: ignore[arg-type]
    Ctx.spec = TestSpec(workload="lab3")
    assert Lab3().tasks(Ctx()) == [("t1", 2), ("t2", 3), ("t3", 5)]  # type: ignore[arg-type]


def test_a_double_kill_probe_runs_one_unit_of_work_and_the_others_the_whole_set() -> None:
    from chaos.core.spec import TestSpec

    base = TestSpec(workload="lab3", options={})
    double, single = explore.probes(Lab3(), {"complete": 1})[2], explore.probes(Lab3(), {})[0]
    assert double.one_task and double.trigger and double.trigger.endswith("2 times")
    # one task, and an AckWait the first kill's restart cannot outlast
    assert double.apply(base, 5, dict(Lab3.one_task)).options == {"set_size": "1", "ack_wait": "2"}
    assert single.point == "relay-crash-before-publish"
    assert single.apply(base, 5, dict(Lab3.one_task)).nemesis == ("relay-crash-before-publish",)
    assert single.apply(base, 5, dict(Lab3.one_task)).options == {}


def test_no_checker_contradicts_another_on_the_shipped_histories_and_a_planted_pair_is_named() -> (
    None
):
    from chaos.checkers.verdict import CheckResult

    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    both = record(apply("t1", 2), apply("t1", 4), apply("t2", 7), apply("t3", 12))
    for r in (
        run(history, [], final_state(10, ALL_DONE)),
        run(history, [], final_state(12, ALL_DONE, both)),
        run(_retried_creates(), [], final_state(10, ALL_DONE)),
    ):
        assert checkers.contradictions(checkers.check_run(r)) == []
    results = checkers.check_run(run(history, [], final_state(12, ALL_DONE, both)))
    planted = [
        CheckResult(checker="counter", verdict=Verdict.VALID, summary="counter 12 = ...")
        if c.checker == "counter"
        else c
        for c in results
    ]
    (said,) = checkers.contradictions(planted)
    assert "double-apply found an amount applied twice, yet the counter matches" in said


INJECTED = {
    "node": "n1", "seq": 4, "method": "KV/Txn", "outcome": "injected", "gen": "g1", "time": 5.0,
    "puts": [{"key": "/lab3/results/t1", "value": "{}", "lease": 0}], "deletes": [],
    "other_branch": {"puts": [], "deletes": []},
}  # fmt: skip
# the failed task committed again, later, on another node (its redelivery)
AGAIN = {
    "node": "n2", "seq": 9, "method": "KV/Txn", "outcome": "ok", "succeeded": True, "time": 7.5,
    "revision": 40, "puts": [{"key": "/lab3/results/t1", "value": "{}", "lease": 0}],
    "deletes": [],
}  # fmt: skip


def _journal(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"source": "etcd-proxy", "entries": list(entries), "problems": [], "nodes": {}}


def test_a_txn_error_counts_only_by_the_proxys_journal_and_the_task_committed_again() -> None:
    spec = {"lab": "lab3", "nemesis": ["txn-error-complete"]}
    # at the claim, the broker's consumer had t1's delivery awaiting ACK, t1 not committed
    at_fire = {"committed_tasks": [], "messages": {"1": {"task_id": "t1", "event_id": "e-t1"}},
               "consumer": {"ack_floor_stream_seq": 0, "delivered_stream_seq": 1,
                            "num_ack_pending": 1}}  # fmt: skip
    # the failed transaction as the host saw it (a proxy between the services and etcd)
    injected = {"node": "n1", "txn": "complete", "error": "injected"}
    heal = {"point": "txn-error-complete", "node": "n1", "process": "worker", "fired_at": 1.0,
            "at_fire": at_fire, "injected": injected}  # fmt: skip
    fired = ops((NEMESIS, "info", "heal-txn-error-complete", heal, {"phase": "heal"}))
    history = [*ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), *fired]

    def judged(*entries: dict[str, Any], redelivered: bool = True) -> Any:
        final = final_state(10, ALL_DONE)
        final["consumer"] = {"delivered_consumer_seq": 4 if redelivered else 3,
                             "delivered_stream_seq": 3}  # fmt: skip
        final["journal"] = _journal(*entries)
        return checkers.scenario_fired(run(history, [], final, **spec))

    r = judged(INJECTED, AGAIN)
    assert r.verdict is Verdict.VALID, r.summary
    assert "the etcd proxy on n1 failed a transaction writing /lab3/results/t1" in r.summary
    assert "committed again at revision 40 by n2" in r.summary
    # the broker's count alone (a solution raises it with a NAK): no later commit of the task
    r = judged(INJECTED)
    assert r.verdict is Verdict.UNKNOWN and "not committed again" in r.summary, r.summary
    # a commit of the task's keys before the failure is not a redo
    r = judged(INJECTED, {**AGAIN, "time": 4.0})
    assert r.verdict is Verdict.UNKNOWN, r.summary
    # a redelivery alone: the proxy never failed anything
    r = judged(AGAIN)
    assert r.verdict is Verdict.UNKNOWN and "no etcd proxy journaled" in r.summary


def test_each_point_gets_a_pause_until_the_workloads_rival_takes_over() -> None:
    from chaos.nemesis.trigger import parse_trigger
    from chaos.workloads.lab1.workload import Lab1

    labels = [p.label for p in explore.probes(Lab1(), {"write_change": 1})]
    assert "pause orders before txn 1 of write_change until lock-acquired" in labels
    assert "pause worker after txn 1 of complete until commit" in [
        p.label for p in explore.probes(Lab3(), {"complete": 1})
    ]
    t = parse_trigger("pause orders before txn 1 of write_change until lock-acquired")
    assert (t.until, t.duration) == ("lock-acquired", None)  # bounded by the default duration
    # kill, pause, two kills, a brief pause, a pause until the rival: at each side of each txn
    assert len(labels) == 2 * 5  # lab1 has no one-shot fault points
