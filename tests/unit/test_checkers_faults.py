"""Fault intervals are worked out once: the checkers and the report read the same intervals."""

from __future__ import annotations

from typing import Any

from chaos.checkers.faults import fault_intervals
from chaos.histories.ops import Op, OpType
from chaos.report.faults import fault_bands
from chaos.workloads.lab1.checkers import stops_of


def _nem(i: int, t: float, ty: str, f: str, value: Any = None, **extra: Any) -> Op:
    return Op(index=i, time=t, process="nemesis", type=OpType(ty), f=f, value=value, extra=extra)


# A pause with a fault id (chaos's ledger), a partition, then one heal that names no fault id
# (Jepsen's :stop): the old checker rule ignored it and left both faults "never healed"; the
# old report rule ended both. The heal-all rule is the one kept.
HEAL_ALL = [
    _nem(0, 1.0, "info", "pause", {"target": "worker"}, fault="pause", phase="start", fault_id=1),
    _nem(
        1,
        1.1,
        "info",
        "pause",
        {"node": "n1", "process": "worker", "pid": 7, "signal": "SIGSTOP"},
        fault="pause",
        phase="start",
        fault_id=1,
    ),
    _nem(2, 2.0, "invoke", "start-partition", None),
    _nem(3, 2.2, "info", "start-partition", {"grudge": {"n2": ["n3"], "n3": ["n2"]}}),
    _nem(4, 5.0, "invoke", "stop", None),
    _nem(5, 5.4, "info", "stop", "healed"),
    Op(index=6, time=6.0, process=0, type=OpType.INVOKE, f="read"),
]


def test_a_heal_without_fault_id_ends_every_fault_in_effect() -> None:
    pause, partition = fault_intervals(HEAL_ALL)
    assert (pause.fault_id, pause.fault, pause.start, pause.end) == (1, "pause", 1.1, 5.4)
    assert pause.nodes == ("n1",) and pause.process == "worker" and pause.touches("n1", "worker")
    assert (partition.fault, partition.start, partition.end) == ("start-partition", 2.2, 5.4)
    assert partition.nodes == ("n2", "n3") and partition.fault_id == "@2"


def test_checkers_and_report_agree_on_the_intervals() -> None:
    bands = fault_bands(HEAL_ALL, end_time=9.0)
    got = [(b.fault_id, b.start, b.end, b.open, b.nodes) for b in bands]
    want = [
        (str(iv.fault_id), iv.start, iv.end, iv.end is None, iv.nodes)
        for iv in fault_intervals(HEAL_ALL)
    ]
    assert got == want
    (stop,) = stops_of(HEAL_ALL)  # lab1: the paused holder was resumed at the heal-all
    assert (stop.node, stop.pid, stop.start, stop.end) == ("n1", 7, 1.1, 5.4)


def test_a_heal_by_id_ends_only_its_fault_and_an_unhealed_one_stays_open() -> None:
    h = [
        _nem(0, 1.0, "info", "pause", {"node": "n1"}, fault="pause", phase="start", fault_id=1),
        _nem(1, 2.0, "info", "kill", {"node": "n2"}, fault="kill", phase="start", fault_id=2),
        _nem(
            2, 3.0, "info", "heal-pause", [{"node": "n1"}], fault="pause", phase="heal", fault_id=1
        ),
        _nem(3, 3.5, "info", "heal-pause", {"node": "n1"}, fault="pause", phase="heal", fault_id=1),
    ]
    pause, kill = fault_intervals(h)
    assert (pause.start, pause.end) == (1.0, 3.5)
    assert (kill.start, kill.end) == (2.0, None) and "never healed" in kill.describe()
    assert [(b.end, b.open) for b in fault_bands(h, end_time=9.0)] == [(3.5, False), (9.0, True)]


def _pause_heal(resumed_at: float | None) -> list[Op]:
    done: dict[str, Any] = {"node": "n1", "process": "orders", "pid": 7, "signal": "SIGCONT"}
    if resumed_at is not None:
        done["resumed_at"] = resumed_at
    return [
        _nem(0, 1.0, "info", "pause", {"node": "n1"}, fault="pause", phase="start", fault_id=1),
        _nem(
            1,
            1.1,
            "info",
            "pause",
            {"node": "n1", "pid": 7},
            fault="pause",
            phase="start",
            fault_id=1,
        ),
        _nem(
            2, 7.80, "info", "heal-pause", [{"node": "n1"}], fault="pause", phase="heal", fault_id=1
        ),
        _nem(3, 7.814, "info", "heal-pause", done, fault="pause", phase="heal", fault_id=1),
    ]


def test_a_pause_ends_when_the_process_was_resumed_not_when_the_heal_was_recorded() -> None:
    # issue 11: the resumed holder wrote at 7.8136 s, before the heal's completion (7.814 s)
    (pause,) = fault_intervals(_pause_heal(7.8101))
    assert (pause.start, pause.end) == (1.1, 7.8101)
    (stop,) = stops_of(_pause_heal(7.8101))
    assert stop.end is not None and stop.end < 7.8136
    # older histories (no resumed_at) keep the completion's time
    (old,) = fault_intervals(_pause_heal(None))
    assert old.end == 7.814
    # a resumed_at outside the heal's request..completion is clamped into it
    (odd,) = fault_intervals(_pause_heal(99.0))
    assert odd.end == 7.814


def test_a_thaw_with_several_targets_ends_at_the_earliest_resume() -> None:
    h = _pause_heal(None)
    h[3] = _nem(
        3, 7.9, "info", "heal-freeze",
        {"targets": [{"node": "n1", "resumed_at": 7.85}, {"node": "n2", "resumed_at": 7.82}]},
        fault="pause", phase="heal", fault_id=1,
    )  # fmt: skip
    (f,) = fault_intervals(h)
    assert f.end == 7.82
