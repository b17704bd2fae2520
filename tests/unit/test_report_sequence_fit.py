"""Sequence diagrams that tell the retry, fit the page and keep fault bands on lanes.

lab3's idempotent-create anomaly is a create that went to a paused node, timed out and was
retried elsewhere: the diagram must show the lost answer and the retry, or it hides the anomaly.
"""

from __future__ import annotations

import re
from pathlib import Path

from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand
from chaos.report.loading import EventRow, load
from chaos.report.page import build_page
from chaos.report.sequence import FIT_WIDTH, LEFT, fault_hits, sequence_svg
from chaos.report.tasks import TaskView
from tests.fixtures import synthetic_runs as runs


def _ev(t: float, node: str, comp: str, kind: str, **data: object) -> EventRow:
    return EventRow(t, node, comp, kind, "t1", "e-t1", 1, dict(data))


def _create(retried: tuple[dict[str, object], ...]) -> ClientOp:
    return ClientOp(
        index=0,
        process=0,
        f="create",
        type="ok",
        start=1.0,
        end=5.0,
        completed=True,
        value={"task_id": "t1", "amount": 2},
        result={"task_id": "t1", "event_id": "e-t1"},
        error=None,
        node="n2",
        retried=retried,
    )


PAUSE = FaultBand(
    fault_id="1", fault="pause", start=0.9, end=6.0, open=False, nodes=("n1",), process="api"
)


def test_a_retried_create_draws_the_lost_answer_then_the_retry() -> None:
    view = TaskView(
        task_id="t1",
        events=[_ev(4.2, "n2", "api", "task-accepted"), _ev(6.1, "n1", "api", "task-accepted")],
        ops=[_create(({"node": "n1", "outcome": "indeterminate", "error": "timed out"},))],
        bands=[PAUSE],
    )
    svg = sequence_svg(view)
    texts = re.findall(r">([^<>]+)</text>", svg)
    lost, retry = texts.index("indeterminate: timed out"), texts.index("retry create (attempt 2)")
    assert texts.index("create(amount=2)") < lost < retry
    # the retry is drawn before its node's acceptance, its time marked as a bound
    assert retry < texts.index("txn: task + idem + outbox")
    assert "≤4.200 s" in texts
    # the first attempt went to api@n1, the answer came from api@n2: both lanes drawn
    assert ">api@n1<" in svg and ">api@n2<" in svg


def test_without_retries_no_retry_is_drawn() -> None:
    view = TaskView(
        task_id="t1", events=[_ev(4.2, "n2", "api", "task-accepted")], ops=[_create(())], bands=[]
    )
    svg = sequence_svg(view)
    assert "retry" not in svg and "≤" not in svg


def test_many_lanes_fit_the_page_and_bands_stay_off_the_margin() -> None:
    events = [
        _ev(1.0 + i / 10, f"n{i}", comp, "delivery" if comp == "worker" else "publish")
        for i in range(1, 4)
        for comp in ("worker", "relay")
        if (comp, i) != ("relay", 3)
    ]
    # accepted before published: the diagram draws a relay's publish after the acceptance
    events += [_ev(0.5 + i / 10, f"n{i}", "api", "task-accepted") for i in range(1, 4)]
    etcd_pause = FaultBand(
        fault_id="2", fault="pause", start=0.9, end=1.05, open=False, nodes=("n9",), process="x"
    )
    view = TaskView(task_id="t1", events=events, ops=[], bands=[etcd_pause])
    svg = sequence_svg(view)
    width = int(re.search(r'width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    # ten lanes (3 api, etcd, 2 relays, broker, 3 workers) at 150 px would be 1,606 px wide
    assert svg.count('font-weight="600"') == 10
    assert width <= FIT_WIDTH + 10
    # the band hit no lane of this task: no rectangle, in the margin or anywhere
    assert 'fill-opacity="0.35"' not in svg and fault_hits(view) == []
    assert "pause x@n9 begins" in svg
    xs = [float(x) for x in re.findall(r'<rect x="([\d.]+)"[^>]*fill-opacity', svg)]
    assert all(x >= LEFT for x in xs)


def test_a_valid_run_draws_the_task_the_fault_hit(tmp_path: Path) -> None:
    page = build_page(load(runs.valid_lab3(tmp_path)))
    sec = page[page.index('<section id="normal">') :]
    sec = sec[: sec.index("</section>")]
    assert "<h2>The task the fault hit</h2>" in sec and "compare" not in sec
    hit = re.search(r"Task <b>(t\d+)</b> is one the fault hit", sec)
    assert hit is not None
    assert 'fill-opacity="0.35"' in sec  # the band is drawn on the lane it stopped
