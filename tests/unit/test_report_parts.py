"""The report's building blocks: fault bands, op intervals, safe inline JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chaos.histories.ops import Op, OpType
from chaos.report.clientops import client_ops
from chaos.report.faults import fault_bands, fault_colour
from chaos.report.html import script_json
from chaos.report.timeline import timeline_data
from tests.fixtures import synthetic_runs as runs


def _op(
    i: int, t: float, p: int | str, ty: str, f: str, value: object = None, error: str | None = None
) -> Op:
    return Op(index=i, time=t, process=p, type=OpType(ty), f=f, value=value, error=error)


def _nem(i: int, t: float, ty: str, phase: str, fid: str | None, value: object = None) -> Op:
    extra: dict[str, object] = {"fault": "pause", "phase": phase}
    if fid:
        extra["fault_id"] = fid
    return Op(
        index=i, time=t, process="nemesis", type=OpType(ty), f=phase, value=value, extra=extra
    )


def test_bands_pair_by_fault_id_from_completion_to_completion() -> None:
    h = [
        _nem(0, 1.0, "invoke", "start", "a", {"node": "n1"}),
        _nem(
            1, 1.1, "info", "start", "a", {"node": "n1", "process": "worker", "signal": "SIGSTOP"}
        ),
        _nem(2, 2.0, "invoke", "start", "b", {"node": "n2"}),
        _nem(3, 2.1, "info", "start", "b", {"grudge": {"n2": ["n1"], "n1": ["n2"]}}),
        _nem(4, 3.0, "invoke", "heal", "a"),
        _nem(5, 3.2, "info", "heal", "a"),
    ]
    a, b = fault_bands(h, end_time=9.0)
    assert (a.fault_id, a.start, a.end, a.open) == ("a", 1.1, 3.2, False)
    assert a.nodes == ("n1",) and a.process == "worker" and a.label == "pause worker@n1 (SIGSTOP)"
    assert (b.fault_id, b.end, b.open, b.nodes) == ("b", 9.0, True, ("n1", "n2"))


def test_a_heal_without_fault_id_heals_everything() -> None:
    h = [
        _nem(0, 1.0, "invoke", "start", "a"),
        _nem(1, 1.1, "info", "start", "a", {"node": "n1"}),
        _nem(2, 2.0, "invoke", "start", "b"),
        _nem(3, 2.1, "info", "start", "b", {"node": "n2"}),
        _nem(4, 5.0, "invoke", "heal", None),
        _nem(5, 5.5, "info", "heal", None),
    ]
    bands = fault_bands(h, end_time=9.0)
    assert [(b.fault_id, b.end, b.open) for b in bands] == [("a", 5.5, False), ("b", 5.5, False)]


def test_fault_colours_are_stable_per_kind() -> None:
    assert fault_colour("pause") != fault_colour("partition")
    assert fault_colour("relay-crash-before-publish") == fault_colour("publish-ack-lost")
    assert fault_colour("weird") == fault_colour("weird")


def test_an_invoke_without_completion_is_info_until_the_end() -> None:
    h = [
        _op(0, 0.5, 0, "invoke", "create", {"task_id": "t1"}),
        _op(1, 0.6, 0, "ok", "create", {"task_id": "t1", "event_id": "e"}),
        _op(2, 0.7, 1, "invoke", "create", {"task_id": "t2"}),
    ]
    a, b = client_ops(h, end_time=4.0)
    assert (a.type, a.completed, a.latency) == ("ok", True, 0.6 - 0.5)
    assert (b.type, b.completed, b.end) == ("info", False, 4.0)


def test_timeline_lanes_group_ops_by_process_in_start_order() -> None:
    h = [
        _op(0, 0.1, 2, "invoke", "w"),
        _op(1, 0.2, 10, "invoke", "r"),
        _op(2, 0.3, 2, "fail", "w", error="conflict"),
        _op(3, 0.4, 10, "ok", "r"),
        _op(4, 0.5, 2, "invoke", "r"),
        _op(5, 0.6, 2, "ok", "r", 3),
    ]
    d = timeline_data(client_ops(h, 1.0), [], [], 1.0)
    assert d["lanes"] == ["2", "10"]  # numeric order, not text order
    assert d["laneStart"] == [0, 2, 3]
    assert d["i"] == [0, 4, 1]
    assert [d["types"][t] for t in d["t"]] == ["fail", "ok", "ok"]
    assert "conflict" in d["v"][0]


def test_inline_json_cannot_close_its_script() -> None:
    html = script_json("x", {"v": "</script><script>alert(1)</script>"})
    inner = re.search(r'id="x">(.*)</script>$', html, re.S)
    assert inner and "</" not in inner.group(1)
    assert json.loads(inner.group(1))["v"] == "</script><script>alert(1)</script>"


def test_fast_loader_reads_what_the_shared_readers_read(tmp_path: Path) -> None:
    from chaos.histories.jsonl import read_events, read_history
    from chaos.report.loading import EventRow, OpRow, load

    run_dir = runs.invalid_lab3(tmp_path / "store")
    run = load(run_dir)
    ops = read_history(run_dir / "history.jsonl").records
    evs = sorted(read_events(run_dir / "events.jsonl").records, key=lambda x: x.time)
    assert run.history == [OpRow.of(o) for o in ops]
    assert run.events == [EventRow.of(x) for x in evs]
    assert run.problems == []


def test_bands_pair_requests_written_as_info_too() -> None:
    # The orchestrator writes the nemesis request as info as well: two info lines per phase.
    h = [
        _nem(0, 2.58, "info", "start", "1", {"node": "n1", "process": "worker"}),
        _nem(1, 2.59, "info", "start", "1", {"node": "n1", "process": "worker", "pid": 50}),
        _op(2, 3.0, 0, "invoke", "create"),
        _nem(3, 7.59, "info", "heal", "1", [{"node": "n1"}]),
        _nem(4, 7.60, "info", "heal", "1", {"node": "n1", "signal": "SIGCONT"}),
    ]
    (b,) = fault_bands(h, end_time=9.0)
    assert (b.fault_id, b.start, b.end, b.open) == ("1", 2.59, 7.60, False)
    assert b.nodes == ("n1",) and b.process == "worker" and b.detail["pid"] == 50
