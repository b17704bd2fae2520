"""Scripted timelines: parsed into steps, and every mistake named by file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.nemesis.plan import parse_duration
from chaos.nemesis.schedule import ScheduleError, load_schedule, parse_schedule
from chaos.workloads.lab1.workload import Lab1
from chaos.workloads.lab3.workload import Lab3

GOOD = """\
# a timeline
schedule:
  - at 3s pause worker for 6s
  - at 10s partition halves for 5s
  - at 500ms kill relay
  - at: 12s
    fault: partition
    grudge: {n1: [n2, n3]}
    for: 4s
triggers:
  - pause worker on delivery for 4s
"""


def test_a_timeline_parses_into_steps_with_their_source_lines() -> None:
    plan = parse_schedule(GOOD, file="t.yaml", default_duration=7.0)
    got = [(s.at, s.fault, s.target, s.duration, s.grudge, s.source) for s in plan.steps]
    assert got == [
        (3.0, "pause", "worker", 6.0, None, "t.yaml:3"),
        (10.0, "partition", "halves", 5.0, None, "t.yaml:4"),
        (0.5, "kill", "relay", 7.0, None, "t.yaml:5"),
        (12.0, "partition", None, 4.0, {"n1": ["n2", "n3"]}, "t.yaml:6"),
    ]
    assert plan.triggers == ("pause worker on delivery for 4s",)


def test_a_bare_list_is_a_schedule() -> None:
    plan = parse_schedule("- at 1s freeze n2 for 2s\n- at 4s pause\n", file="x.yaml")
    assert [(s.fault, s.target) for s in plan.steps] == [("freeze", "n2"), ("pause", None)]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("schedule:\n  - at 3x pause worker\n", "f.yaml:2: field 'at':"),
        ("schedule:\n  - at 3s pause worker for soon\n", "f.yaml:2: field 'for':"),
        ("schedule:\n  - at 3s explode worker\n", "f.yaml:2: field 'fault':"),
        ("schedule:\n  - sometime pause\n", "f.yaml:2: field 'step':"),
        ("schedule:\n  - at: 1s\n    fault: pause\n    colour: red\n", "f.yaml:4: field 'colour':"),
        ("schedule:\n  - fault: pause\n", "f.yaml:2: field 'at': missing"),
        ("schedule:\n  - at: 1s\n    fault: pause\n    for: [1]\n", "f.yaml:4: field 'for':"),
        (
            "schedule:\n  - at: 1s\n    fault: pause\n    grudge: {n1: [n2]}\n",
            "f.yaml:4: field 'grudge': only a partition",
        ),
        (
            "schedule:\n  - at: 1s\n    fault: kill\n    at: 2s\n",
            "f.yaml:4: field 'at': given twice",
        ),
        ("triggers:\n  - pause worker on lunch\n", "f.yaml:2: field 'triggers': trigger"),
        ("triggers:\n  - pause worker at lunch\n", "f.yaml:2: field 'triggers': trigger"),
        ("schedul:\n  - at 1s pause\n", "f.yaml:1: field 'schedul': unknown section"),
        ("schedule: [at 1s pause\n", "f.yaml:2: not valid YAML"),
        ("", "f.yaml: empty schedule"),
    ],
)
def test_errors_name_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(ScheduleError) as e:
        parse_schedule(text, file="f.yaml", workload=Lab3(), workload_name="lab3")
    assert str(e.value).startswith(where), str(e.value)


def test_a_trigger_is_checked_against_the_workloads_hold_points() -> None:
    text = "triggers:\n  - pause worker on delivery\n"
    assert parse_schedule(text, workload=Lab3(), workload_name="lab3").triggers
    with pytest.raises(ScheduleError, match="lab1 has no hold point for 'worker on delivery'"):
        parse_schedule(text, file="f.yaml", workload=Lab1(), workload_name="lab1")


def test_load_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match="cannot read"):
        load_schedule(tmp_path / "nope.yaml")
    f = tmp_path / "ok.yaml"
    f.write_text("- at 1s pause n1 for 1s\n")
    assert load_schedule(f).steps[0].source == f"{f}:1"


@pytest.mark.parametrize(
    ("text", "seconds"), [("3s", 3.0), ("500ms", 0.5), ("1.5m", 90.0), ("2", 2.0), (4, 4.0)]
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "-1s", "s", "", True, "inf"])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_clock_and_packet_loss_steps_parse_with_their_specs() -> None:
    plan = parse_schedule(
        "- at 0s clock skew=-1.5:orders@n2 for 60s\n- at 2s packet-loss 30%:n1+n2 for 3s\n",
        file="x.yaml",
    )
    assert [(s.fault, s.target, s.duration) for s in plan.steps] == [
        ("clock", "skew=-1.5:orders@n2", 60.0),
        ("packet-loss", "30%:n1+n2", 3.0),
    ]
