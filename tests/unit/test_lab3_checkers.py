"""lab3 checkers on hand-made runs: each has a run that must pass and one that must fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.checkers.verdict import Verdict
from chaos.histories.ops import NEMESIS, Event, Op, OpType
from chaos.histories.store import StoredRun
from chaos.workloads.lab3 import checkers

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


def run(history: list[Op], events: list[Event], final: dict[str, Any]) -> StoredRun:
    return StoredRun(path=Path("/nonexistent"), spec={"lab": "lab3"}, history=history,
                     events=events, final=final, schedule=[], problems=[])  # fmt: skip


def final_state(counter: int, done: dict[str, str]) -> dict[str, Any]:
    return {
        "counter": counter,
        "tasks": done,
        "results": {t: {"amount": AMOUNTS[t], "event_id": f"e-{t}"} for t, s in done.items()
                    if s == "completed"},
    }  # fmt: skip


ALL_DONE = {"t1": "completed", "t2": "completed", "t3": "completed"}


def test_all_completed_once_is_valid() -> None:
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})),
            [ev(1.0, "n1", "worker", "commit", "t1", amount=2)], final_state(10, ALL_DONE))  # fmt: skip
    results = {c.checker: c for c in checkers.check_all(r)}
    assert all(c.verdict is Verdict.VALID for c in results.values()), results


def test_accepted_task_not_completed_is_lost_with_its_chain() -> None:
    events = [
        ev(1.0, "n1", "worker", "delivery", "t2", num_delivered=1),
        ev(1.1, "n1", "worker", "ack", "t2"),
        ev(1.2, "n1", "worker", "crash", "t2"),
    ]
    done = {"t1": "completed", "t2": "pending", "t3": "completed"}
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), events, final_state(7, done))
    lost = checkers.lost_tasks(r)
    assert lost.verdict is Verdict.INVALID
    assert lost.anomalies[0]["task_id"] == "t2"
    assert "ACKed by n1" in lost.summary and "no commit followed" in lost.summary
    assert [s["step"] for s in lost.anomalies[0]["chain"]] == ["delivery", "ack", "crash"]


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


def test_two_commits_of_one_event_after_a_pause_is_a_double_apply() -> None:
    history = ops(
        *creates({"t1": "ok", "t2": "ok", "t3": "ok"}),
        (NEMESIS, "info", "pause", {"node": "n1", "process": "worker"},
         {"fault": "pause", "phase": "start", "fault_id": 1}),
        (NEMESIS, "info", "pause", {"node": "n1", "process": "worker", "pid": 10},
         {"fault": "pause", "phase": "start", "fault_id": 1}),
        (NEMESIS, "info", "heal-pause", None, {"fault": "pause", "phase": "heal", "fault_id": 1}),
    )  # fmt: skip
    events = [
        ev(0.9, "n1", "worker", "delivery", "t2", num_delivered=1),
        ev(2.0, "n2", "worker", "delivery", "t2", num_delivered=2),
        ev(2.5, "n2", "worker", "commit", "t2", amount=3, num_delivered=2),
        ev(3.0, "n1", "worker", "commit", "t2", amount=3, num_delivered=1),
    ]
    r = run(history, events, final_state(13, ALL_DONE))
    da = checkers.double_apply(r)
    assert da.verdict is Verdict.INVALID
    assert "task t2: counter incremented twice" in da.summary
    assert "n1's worker paused at" in da.summary
    assert "the counter is 13 but the 3 results add up to 10" in da.summary
    steps = [s["step"] for s in da.anomalies[0]["chain"]]
    assert steps == ["delivery", "redelivery", "commit", "commit"]


def test_counter_below_the_results_is_a_lost_update() -> None:
    r = run(ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), [], final_state(8, ALL_DONE))
    c = checkers.counter_checker(r)
    assert c.verdict is Verdict.INVALID and "lost update" in c.summary
    assert checkers.counter_checker(run([], [], final_state(10, ALL_DONE))).verdict is Verdict.VALID


def test_a_crashing_checker_yields_unknown_not_a_traceback() -> None:
    broken = run(ops(*creates({"t1": "ok"})), [], {"tasks": "not-a-dict", "counter": 1})
    results = {c.checker: c for c in checkers.check_all(broken)}
    assert results["lost-tasks"].verdict is Verdict.UNKNOWN
    assert "crashed" in results["lost-tasks"].summary
