"""lab3's model of a run: each derived fact is computed once per check, over all the checkers.

Two counts over one ``check_run`` (tests/fixtures/model_facts.py, as lab1's): the model's facts
(each cached property's computation), and the functions that derive them from the stored parts
(wherever a lab3 module holds them): a checker that derived a fact again itself, instead of
reading the model, calls one of those a second time. The runs below reach every fact between
them, so neither count can pass by computing nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from chaos.checkers import faults, journal
from chaos.histories import ops as ops_module
from chaos.histories.ops import NEMESIS
from chaos.workloads.lab3 import checkers, model
from chaos.workloads.lab3 import record as by_record
from chaos.workloads.systems import record_values
from tests.fixtures.model_facts import Counts, counting, facts_of
from tests.unit.test_lab3_checkers import (
    ALL_DONE,
    PAUSE_N1,
    TWICE,
    creates,
    ev,
    final_state,
    ops,
    run,
)
from tests.unit.test_txn_points import INJECTED, _journal

FACTS = facts_of(model.Lab3Run)
# what the facts are derived with; nothing else in a check may call these
DERIVATIONS: list[Callable[..., Any]] = [
    faults.fault_intervals, model.host_crashes, model.creates_of, ops_module.pair_index,
    record_values.unusable, by_record.outbox_events, by_record.applies, by_record.created_tasks,
    by_record.completed_tasks, journal.read_journal,
]  # fmt: skip


def _double() -> checkers.Lab3Run:
    """t2 applied twice after a pause, by etcd's record."""
    events = [
        ev(0.9, "n1", "worker", "delivery", "t2", num_delivered=1),
        ev(2.0, "n2", "worker", "delivery", "t2", num_delivered=2),
        ev(2.5, "n2", "worker", "commit", "t2", amount=3, num_delivered=2),
        ev(3.0, "n1", "worker", "commit", "t2", amount=3, num_delivered=1),
    ]
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}), *PAUSE_N1)
    return run(history, events, final_state(13, ALL_DONE, TWICE))


def _lost() -> checkers.Lab3Run:
    """t2 ACKed and never committed, its worker crashed by the host; t3 never delivered (two
    lost tasks: each one's chain reads the faults and the crashes)."""
    events = [ev(1.0, "n1", "worker", "delivery", "t2", num_delivered=1),
              ev(1.1, "n1", "worker", "ack", "t2")]  # fmt: skip
    killed = {"point": "worker-crash-before-ack", "node": "n1", "process": "worker",
              "task_id": "t2", "killed_pid": 10, "exit_seen_at": 1.2,
              "restarted_pid": 11}  # fmt: skip
    heal = (NEMESIS, "info", "heal-worker-crash-before-ack", killed, {"phase": "heal"})
    history = ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"}), heal)
    done = {"t1": "completed", "t2": "pending", "t3": "pending"}
    return run(history, events, final_state(2, done))


def _txn_error() -> checkers.Lab3Run:
    """A txn-error-complete scenario, confirmed by an etcd proxy's journal."""
    heal = {"point": "txn-error-complete", "node": "n1", "process": "worker", "fired_at": 1.0}
    fired = ops((NEMESIS, "info", "heal-txn-error-complete", heal, {"phase": "heal"}))
    final = final_state(10, ALL_DONE)
    final["consumer"] = {"delivered_consumer_seq": 4, "delivered_stream_seq": 3}
    final["journal"] = _journal(INJECTED)
    history = [*ops(*creates({"t1": "ok", "t2": "ok", "t3": "ok"})), *fired]
    return run(history, [], final, nemesis=["txn-error-complete"])


RUNS = {"double-apply": _double, "lost-task": _lost, "txn-error": _txn_error}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counts:
    return counting(monkeypatch, model.Lab3Run, DERIVATIONS, "chaos.workloads.lab3")


@pytest.mark.parametrize("name", RUNS)
def test_each_fact_is_computed_once_per_check_over_all_checkers(name: str, counted: Counts) -> None:
    facts, calls = counted.facts, counted.calls
    results = checkers.check_run(RUNS[name]())
    assert [r.checker for r in results] == list(checkers.CHECKERS)
    assert not [r for r in results if "crashed" in r.summary], results
    assert facts and all(n == 1 for n in facts.values()), facts
    assert calls and all(n == 1 for n in calls.values()), calls


def test_the_runs_reach_every_fact(counted: Counts) -> None:
    facts, calls = counted.facts, counted.calls
    for make in RUNS.values():
        checkers.check_run(make())
    assert sorted(facts) == FACTS
    assert len(calls) == len(DERIVATIONS), calls


def test_a_check_leaves_the_models_facts_as_it_found_them() -> None:
    for make in RUNS.values():
        m = make()
        before = {name: copy.deepcopy(getattr(m, name)) for name in FACTS}
        checkers.check_run(m)
        assert {name: getattr(m, name) for name in FACTS} == before
