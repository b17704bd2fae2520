"""lab3 checkers on hand-made runs: each has a run that must pass and one that must fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.checkers.verdict import Verdict
from chaos.histories.ops import NEMESIS, Event, Op, OpType
from chaos.histories.store import StoredRun
from chaos.workloads.lab3 import checkers, keys

AMOUNTS = {"t1": 2, "t2": 3, "t3": 5}


def ops(*specs: tuple[Any, str, str, Any, dict[str, Any]]) -> list[Op]:
    out = []
    for i, (process, type_, f, value, extra) in enumerate(specs):
        out.append(Op(index=i, time=i * 0.1, process=process, type=OpType(type_), f=f,
                      value=value, extra=extra))  # fmt: skip
    return out


def creates(outcomes: dict[str, str]) -> list[tuple[Any, str, str, Any, dict[str, Any]]]:
    rows: list[tuple[Any, str, str, Any, dict[str, Any]]] = []
    for p, (task, outcome) in enumerate(outcomes.items()):
        v = {"task_id": task, "amount": AMOUNTS[task]}
        rows.append((p, "invoke", "create", v, {}))
        rows.append((p, outcome, "create", {**v, "event_id": f"e-{task}"}, {}))
    return rows


def ev(t: float, node: str, comp: str, kind: str, task: str, **data: Any) -> Event:
    return Event(time=t, node=node, component=comp, kind=kind, task_id=task,
                 event_id=f"e-{task}", pid=10, data=data)  # fmt: skip


def run(
    history: list[Op], events: list[Event], final: dict[str, Any], **spec: Any
) -> checkers.Lab3Run:
    """The checkers' model of a run stored with these parts."""
    stored = StoredRun(path=Path("/nonexistent"), spec={"lab": "lab3", **spec}, history=history,
                       events=events, final=final, schedule=[], problems=[])  # fmt: skip
    return checkers.model_of(stored)


def apply(task: str, counter: int, *, dedup: bool = True) -> dict[str, Any]:
    """The writes of one complete() transaction, as etcd's record lists them."""
    puts: dict[str, Any] = {
        keys.COUNTER: counter,
        keys.result(task): {"amount": AMOUNTS[task], "event_id": f"e-{task}"},
        keys.task(task): {"task_id": task, "amount": AMOUNTS[task], "status": "completed"},
    }
    if dedup:
        puts[keys.dedup(f"e-{task}")] = {"task_id": task}
    return puts


def record(*writes: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    """etcd's record: the initial counter, every create, then the given transactions in order."""
    txns = [{"revision": 1, "puts": {keys.COUNTER: 0}, "deletes": []}]
    for t, amount in AMOUNTS.items():
        puts = {keys.task(t): {"task_id": t, "amount": amount, "status": "pending"},
                keys.outbox(f"e-{t}"): {"task_id": t, "event_id": f"e-{t}", "amount": amount}}  # fmt: skip
        txns.append({"revision": len(txns) + 1, "puts": puts, "deletes": []})
    for w in writes:
        txns.append({"revision": len(txns) + 1, "puts": w, "deletes": []})
    return {"source": "etcd", "prefix": keys.PREFIX, "from_revision": 1,
            "to_revision": len(txns) + 1, "txns": txns, "error": error, "truncated": False}  # fmt: skip


ONCE_EACH = record(apply("t1", 2), apply("t2", 5), apply("t3", 10))


def final_state(
    counter: int, done: dict[str, str], rec: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "counter": counter,
        "tasks": done,
        "results": {t: {"amount": AMOUNTS[t], "event_id": f"e-{t}"} for t, s in done.items()
                    if s == "completed"},
        "record": rec if rec is not None else ONCE_EACH,
        # the broker's configuration as chaos made it, unchanged at the end (broker-config)
        "broker_config": {"created": BROKER, "final": BROKER},
        # every node's etcd-proxy journal read, no call refused (etcd-scope)
        "journal": {"source": "etcd-proxy", "entries": [], "problems": [],
                    "nodes": {"n1": 0, "n2": 0, "n3": 0}, "unread": {}},
    }  # fmt: skip


BROKER = {"streams": {"TASKS": {"config": {"name": "TASKS", "retention": "limits"},
                                "created": "c0", "consumers": {"workers": {
                                    "config": {"ack_wait": 2_000_000_000, "max_deliver": -1},
                                    "created": "c1", "paused": False}}}}}  # fmt: skip
ALL_DONE = {"t1": "completed", "t2": "completed", "t3": "completed"}


def test_all_completed_once_is_valid() -> None:
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})),
            [ev(1.0, "n1", "worker", "commit", "t1", amount=2)], final_state(10, ALL_DONE))  # fmt: skip
    results = {c.checker: c for c in checkers.check_run(r)}
    assert all(c.verdict is Verdict.VALID for c in results.values()), results


def test_accepted_task_not_completed_is_lost_with_its_chain() -> None:
    events = [
        ev(1.0, "n1", "worker", "delivery", "t2", num_delivered=1),
        ev(1.1, "n1", "worker", "ack", "t2"),
        ev(1.15, "n1", "worker", "crash", "t2"),  # a service's word for a crash: not shown
    ]
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    point = "worker-crash-before-ack"
    # the crash the host made and saw, at the point the service said it was on t2
    killed = {"point": point, "node": "n1", "process": "worker", "pid": 10, "task_id": "t2",
              "killed_pid": 10, "exit_seen_at": 1.2, "restarted_pid": 11}  # fmt: skip
    heal = (NEMESIS, "info", f"heal-{point}", killed, {"fault": point, "phase": "heal"})
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}), heal)
    lost = checkers.lost_tasks(run(history, events, final_state(7, done)))
    assert lost.verdict is Verdict.INVALID
    assert lost.anomalies[0]["task_id"] == "t2"
    assert "ACKed by n1" in lost.summary and "no commit followed" in lost.summary
    steps = lost.anomalies[0]["chain"]
    assert [s["step"] for s in steps] == ["delivery", "ack", "crash"]
    assert steps[-1]["data"] == {"fault": point, "pid": 10, "by": "the host"}


def test_a_loss_read_early_at_rest_says_when_it_was_read() -> None:
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    plain = checkers.lost_tasks(run(history, [], final_state(7, done)))
    early = checkers.lost_tasks(run(history, [], {**final_state(7, done), "at_rest": 3.61}))
    assert plain.verdict is early.verdict is Verdict.INVALID
    assert "stood still" not in plain.summary
    assert "stood still 3.6 s with no message left in the broker" in early.summary
    # and a run whose every task completed says nothing of it
    fine = checkers.lost_tasks(run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [],
                                   {**final_state(10, ALL_DONE), "at_rest": 3.61}))  # fmt: skip
    assert fine.verdict is Verdict.VALID and "stood still" not in fine.summary


def test_info_create_that_never_reached_the_system_is_not_lost() -> None:
    done = {"t1": "completed", "t3": "completed"}
    r = run(ops(*creates({"t1": "ok", "t2": "info", "t3": "ok"})), [], final_state(7, done))
    assert checkers.lost_tasks(r).verdict is Verdict.VALID


def test_info_create_the_system_accepted_must_complete() -> None:
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    r = run(ops(*creates({"t1": "ok", "t2": "info", "t3": "ok"})), [], final_state(7, done))
    lost = checkers.lost_tasks(r)
    assert lost.verdict is Verdict.INVALID and lost.anomalies[0]["accepted"] is False


def test_no_final_state_is_unknown_not_valid() -> None:
    r = run(ops(*creates({"t1": "ok"})), [], {})
    assert checkers.lost_tasks(r).verdict is Verdict.UNKNOWN
    assert checkers.double_apply(r).verdict is Verdict.UNKNOWN


PAUSE_N1 = (
    (NEMESIS, "info", "pause", {"node": "n1", "process": "worker"},
     {"fault": "pause", "phase": "start", "fault_id": 1}),
    (NEMESIS, "info", "pause", {"node": "n1", "process": "worker", "pid": 10},
     {"fault": "pause", "phase": "start", "fault_id": 1}),
    (NEMESIS, "info", "heal-pause", None, {"fault": "pause", "phase": "heal", "fault_id": 1}),
)  # fmt: skip
TWICE = record(apply("t1", 2), apply("t2", 5), apply("t2", 8), apply("t3", 13))


def test_two_applies_in_etcds_record_after_a_pause_is_a_double_apply() -> None:
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}), *PAUSE_N1)
    events = [
        ev(0.9, "n1", "worker", "delivery", "t2", num_delivered=1),
        ev(2.0, "n2", "worker", "delivery", "t2", num_delivered=2),
        ev(2.5, "n2", "worker", "commit", "t2", amount=3, num_delivered=2),
        ev(3.0, "n1", "worker", "commit", "t2", amount=3, num_delivered=1),
    ]
    r = run(history, events, final_state(13, ALL_DONE, TWICE))
    da = checkers.double_apply(r)
    assert da.verdict is Verdict.INVALID
    assert (
        "task t2: counter incremented twice by its amount (3) — etcd shows the counter changed "
        "for it at revisions 6, 7" in da.summary
    )
    assert any(a.get("kind") == "counter-excess" for a in da.anomalies)
    assert "commit by n1 at 3.00 s after n1's worker paused at" in da.summary
    assert da.anomalies[0]["revisions"] == [6, 7]
    steps = [s["step"] for s in da.anomalies[0]["chain"]]
    assert steps == ["delivery", "redelivery", "commit", "commit"]
    c = checkers.counter_checker(r)
    assert c.verdict is Verdict.INVALID
    assert "the counter is 13 but the 3 accepted tasks add up to 10" in c.summary


def test_an_apply_the_service_called_a_duplicate_is_still_found() -> None:
    # the dedup record goes in a second transaction: the second apply reports "suppressed" and
    # the results keep a running total, so events and results both look right; etcd does not
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}), *PAUSE_N1)
    second = apply("t2", 8, dedup=False)
    second[keys.result("t2")] = {"amount": 6, "event_id": "e-t2"}
    rec = record(apply("t1", 2), apply("t2", 5, dedup=False), second, apply("t3", 13))
    events = [
        ev(2.5, "n2", "worker", "commit", "t2", amount=3, num_delivered=2),
        ev(3.0, "n1", "worker", "suppressed", "t2", num_delivered=1),
    ]
    final = final_state(13, ALL_DONE, rec)
    final["results"]["t2"]["amount"] = 6  # the results add up to the counter
    r = run(history, events, final)
    da = checkers.double_apply(r)
    assert da.verdict is Verdict.INVALID
    assert "task t2: counter incremented twice by its amount (3)" in da.summary
    assert "the service reported 1 commit(s)" in da.summary
    assert checkers.counter_checker(r).verdict is Verdict.INVALID


def test_a_commit_reported_twice_but_applied_once_is_a_narration_note_not_a_double_apply() -> None:
    events = [
        ev(2.5, "n2", "worker", "commit", "t2", amount=3, num_delivered=2),
        ev(3.0, "n1", "worker", "commit", "t2", amount=3, num_delivered=1),
    ]
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), events, final_state(10, ALL_DONE))
    da = checkers.double_apply(r)
    assert da.verdict is Verdict.VALID, da.summary
    assert "the service reported 2 commit(s) of task t2; etcd shows 1 apply(ies)" in da.summary
    assert "it must answer 'duplicate'" in da.summary  # the contract it broke, by name
    assert checkers.counter_checker(r).verdict is Verdict.VALID  # no checker contradicts another


def test_a_change_of_the_counter_no_task_explains_is_invalid() -> None:
    rec = record(apply("t1", 2), apply("t2", 5), apply("t3", 10), {keys.COUNTER: 17})
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [], final_state(17, ALL_DONE, rec))
    da = checkers.double_apply(r)
    assert da.verdict is Verdict.INVALID
    assert "the counter changed by +7 at revision 8" in da.summary


def test_without_etcds_record_the_double_apply_is_unknown_and_says_why() -> None:
    creates3 = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    compacted = record(error="etcd's history was compacted after revision 1: ...")
    da = checkers.double_apply(run(creates3, [], final_state(10, ALL_DONE, compacted)))
    assert da.verdict is Verdict.UNKNOWN and "compacted" in da.summary
    no_record = final_state(10, ALL_DONE)
    del no_record["record"]
    da = checkers.double_apply(run(creates3, [], no_record))
    assert da.verdict is Verdict.UNKNOWN and "has no etcd record" in da.summary


def test_counter_below_the_accepted_amounts_is_a_lost_update() -> None:
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [], final_state(8, ALL_DONE))
    c = checkers.counter_checker(r)
    assert c.verdict is Verdict.INVALID and "lost update" in c.summary
    ok = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [], final_state(10, ALL_DONE))
    assert checkers.counter_checker(ok).verdict is Verdict.VALID


def test_an_info_create_counts_when_etcd_shows_its_task() -> None:
    # t3's create timed out, but etcd's record holds its task: it was accepted and must count
    h = ops(*creates({"t1": "ok", "t2": "ok", "t3": "info"}))
    assert checkers.counter_checker(run(h, [], final_state(10, ALL_DONE))).verdict is Verdict.VALID
    short = checkers.counter_checker(run(h, [], final_state(5, ALL_DONE)))
    assert short.verdict is Verdict.INVALID


def test_a_crashing_checker_yields_unknown_not_a_traceback() -> None:
    broken = run(ops(*creates({"t1": "ok"})), [], {"tasks": "not-a-dict", "counter": 1})
    results = {c.checker: c for c in checkers.check_run(broken)}
    assert results["lost-tasks"].verdict is Verdict.UNKNOWN
    assert "crashed" in results["lost-tasks"].summary


def _scenario_run(
    point: str, heal: dict[str, Any] | None, final: dict[str, Any]
) -> checkers.Lab3Run:
    rows = list(creates({"t1": "ok", "t2": "ok", "t3": "ok"}))
    meta = {"fault": point, "phase": "start", "fault_id": 1}
    rows.append((NEMESIS, "info", point, {"point": point}, meta))
    if heal is not None:
        hmeta = {"fault": point, "phase": "heal", "fault_id": 1}
        rows.append((NEMESIS, "info", f"heal-{point}", [{"point": point}], hmeta))
        rows.append((NEMESIS, "info", f"heal-{point}", {"point": point, **heal}, hmeta))
    return run(ops(*rows), [], final, nemesis=[point], scenario=point)


# what the host saw of a crash it made (chaos.nemesis.hostkill), and the state it read at the claim
HOST_KILL = {"killed_pid": 40, "signal": "SIGKILL", "signalled_at": 1.3, "exit_seen_at": 1.35}
UNPUBLISHED = {
    "pending_event_ids": ["e-t2"],
    "messages": {"1": {"task_id": "t1", "event_id": "e-t1"}},
}


def test_a_scenario_counts_only_when_the_orchestrator_saw_its_fault_fire() -> None:
    crashed = {"node": "n2", "process": "relay", "pid": 40, "fired_at": 1.2, **HOST_KILL,
               "restarted_pid": 77, "at_fire": UNPUBLISHED}  # fmt: skip
    point = "relay-crash-before-publish"
    ok = checkers.scenario_fired(_scenario_run(point, crashed, final_state(10, ALL_DONE)))
    assert ok.verdict is Verdict.VALID, ok.summary
    assert "the host SIGKILLed relay on n2 (pid 40, by its own process table)" in ok.summary
    assert "restarted it (pid 77)" in ok.summary
    never = checkers.scenario_fired(
        _scenario_run(point, {"point": point}, final_state(10, ALL_DONE))
    )
    assert never.verdict is Verdict.UNKNOWN and "never fired" in never.summary
    # the process never came back: the scenario did not happen as it should
    claimed = {**crashed, "restarted_pid": None}
    fake = checkers.scenario_fired(_scenario_run(point, claimed, final_state(10, ALL_DONE)))
    assert fake.verdict is Verdict.UNKNOWN and "reported firing at 1.2 s, but" in fake.summary
    assert "never saw it restarted" in fake.summary


def _msgs(*bodies: tuple[int, str, str, int]) -> dict[str, Any]:
    return {str(seq): {"event_id": e, "task_id": t, "amount": str(a)} for seq, e, t, a in bodies}


def test_lost_publish_ack_counts_only_by_copies_of_one_event_chaos_read_itself() -> None:
    """Confirmed by two copies of an event pending at the claim, one stored after it and both
    delivered — never by a message count, which a junk publish raises (issue 29)."""
    point = "lost-publish-ack"
    at = {"pending_event_ids": ["e-t2"], "stream": {"last_seq": 1},
          "messages": _msgs((1, "e-t1", "t1", 2))}  # fmt: skip
    fired = {"node": "n1", "process": "relay", "pid": 5, "fired_at": 0.8, "at_fire": at}
    copies = _msgs((1, "e-t1", "t1", 2), (2, "e-t2", "t2", 3), (3, "e-t2", "t2", 3),
                   (4, "e-t3", "t3", 5))  # fmt: skip
    delivered = {"delivered_stream_seq": 4, "delivered_consumer_seq": 4}
    twice = {**final_state(10, ALL_DONE), "messages": copies, "consumer": delivered,
             "stream": {"messages": 4}}  # fmt: skip
    got = checkers.scenario_fired(_scenario_run(point, fired, twice))
    assert got.verdict is Verdict.VALID, got.summary
    assert "event e-t2 of task t2" in got.summary and "messages 2, 3" in got.summary
    # the attack: the publish acked as usual, one junk message: 4 messages for 3 tasks
    junk = _msgs((1, "e-t1", "t1", 2), (2, "e-t2", "t2", 3), (3, "None", "None", 0),
                 (4, "e-t3", "t3", 5))  # fmt: skip
    counted = {**twice, "messages": junk}
    got = checkers.scenario_fired(_scenario_run(point, fired, counted))
    assert got.verdict is Verdict.UNKNOWN and "did not observe a republished event" in got.summary
    # a copy with another amount is no copy of the event
    other = _msgs((2, "e-t2", "t2", 3), (3, "e-t2", "t2", 9))
    got = checkers.scenario_fired(_scenario_run(point, fired, {**twice, "messages": other}))
    assert got.verdict is Verdict.UNKNOWN
    # two copies, the second never delivered: the workers never saw the duplicate
    short = {**twice, "consumer": {"delivered_stream_seq": 2, "delivered_consumer_seq": 2}}
    got = checkers.scenario_fired(_scenario_run(point, fired, short))
    assert got.verdict is Verdict.UNKNOWN and "delivered only up to message 2" in got.summary
    # no state read at the claim: nothing to confirm by
    bare = {k: v for k, v in fired.items() if k != "at_fire"}
    got = checkers.scenario_fired(_scenario_run(point, bare, twice))
    assert got.verdict is Verdict.UNKNOWN and "read no state" in got.summary


def test_a_worker_crash_counts_when_the_broker_itself_redelivered() -> None:
    point = "worker-crash-before-ack"
    # at the claim: t1 committed in etcd, its message delivered and not ACKed by the consumer
    split = {"committed_tasks": ["t1"], "messages": {"1": {"task_id": "t1", "event_id": "e-t1"}},
             "consumer": {"ack_floor_stream_seq": 0, "delivered_stream_seq": 1,
                          "num_ack_pending": 1}}  # fmt: skip
    fired = {"node": "n2", "process": "worker", "pid": 36, "fired_at": 8.3, **HOST_KILL,
             "killed_pid": 36, "restarted_pid": 65, "at_fire": split}  # fmt: skip
    redelivered = {**final_state(10, ALL_DONE),
                   "consumer": {"delivered_consumer_seq": 4, "delivered_stream_seq": 3}}  # fmt: skip
    got = checkers.scenario_fired(_scenario_run(point, fired, redelivered))
    assert got.verdict is Verdict.VALID and "4 deliveries of 3 message(s), 1 of them" in got.summary
    assert "task t1 committed and not ACKed" in got.summary
    once = {**final_state(10, ALL_DONE),
            "consumer": {"delivered_consumer_seq": 3, "delivered_stream_seq": 3}}  # fmt: skip
    assert checkers.scenario_fired(_scenario_run(point, fired, once)).verdict is Verdict.UNKNOWN


def test_a_trigger_that_never_fired_makes_the_run_not_count() -> None:
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [], final_state(10, ALL_DONE),
            triggers=["pause worker on delivery"])  # fmt: skip
    got = checkers.scenario_fired(r)
    assert (
        got.verdict is Verdict.UNKNOWN and "'pause worker on delivery' never fired" in got.summary
    )
    fired = ops(
        *creates({"t1": "ok", "t2": "ok", "t3": "ok"}),
        (NEMESIS, "info", "pause", {"node": "n1"},
         {"fault": "pause", "phase": "start", "fault_id": 1,
          "trigger": {"phrase": "pause worker on delivery"}}),
    )  # fmt: skip
    r2 = run(fired, [], final_state(10, ALL_DONE), triggers=["pause worker on delivery"])
    assert checkers.scenario_fired(r2).verdict is Verdict.VALID
