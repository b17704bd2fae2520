"""Sequence diagrams in happens-before order, whatever the nodes' clocks say (issue 32).

The case the issue names: under check-then-act, seed 7, a relay's publish (stamped 3.056 s) was
drawn before the api's create transaction (3.127 s), which etcd's record puts first (revisions 4,
6, 7). Here n3's clock (the relay's) runs behind and the api logs its transaction late: the
stamps alone put the publish first; etcd's revisions, the broker's order and request→answer
must not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from chaos.checkers.journal import read_journal
from chaos.report.causal import Write, causal_times, task_writes, writes_by_name
from chaos.report.clientops import ClientOp
from chaos.report.loading import EventLike, EventRow
from chaos.report.sequence import sequence_svg, step_rows
from chaos.report.tasks import TaskView

E = "e-t1"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "causal_seed7_t2.json"


def _ev(t: float, node: str, comp: str, kind: str, pid: int, **data: object) -> EventRow:
    return EventRow(t, node, comp, kind, "t1", E, pid, dict(data))


# api on n2 (its clock right, its log late); relay on n3 (clock 0.1 s behind); worker on n1
EVENTS = [
    _ev(3.125, "n2", "api", "txn", 10, fn="create", n=1, ok=True, rev=4),
    _ev(3.127, "n2", "api", "task-accepted", 10, amount=2, new=True),
    _ev(3.056, "n3", "relay", "publish", 20, attempt=1, acked=True, stream_seq=1),
    _ev(3.061, "n3", "relay", "marked-published", 20, stream_seq=1),
    _ev(3.200, "n1", "worker", "delivery", 30, num_delivered=1, stream_seq=1),
    _ev(3.705, "n1", "worker", "txn", 30, fn="complete", n=1, ok=True, rev=12),
    _ev(3.706, "n1", "worker", "commit", 30, amount=2),
    _ev(3.707, "n1", "worker", "ack", 30),
]
# etcd's record of the task's keys, each stamped by its node's proxy (on that node's clock)
WRITES = [
    Write(node="n2", revision=4, time=3.020),  # the create: task, idem, outbox
    Write(node="n3", revision=6, time=3.050),  # the relay's claim
    Write(node="n3", revision=7, time=3.053),  # the outbox entry taken
    Write(node="n3", revision=9, time=3.060),  # marked published
    Write(node="n1", revision=12, time=3.704),  # the worker's complete
]
CREATE = ClientOp(
    index=0, process=0, f="create", type="ok", start=3.000, end=3.130, completed=True,
    value={"task_id": "t1", "amount": 2}, result={"task_id": "t1", "event_id": E},
    error=None, node="n2", retried=(),
)  # fmt: skip
CAUSAL = [
    "create(amount=2)",
    "txn",
    "txn: task + idem + outbox",
    # concurrent with the answer: placed by the stamps the record gives (etcd answered the
    # create at 3.020 s, the relay's writes from 3.050 s), the answer at 3.130 s
    "publish #1 → seq 1",
    "mark outbox published",
    "ok",
    "deliver #1",
    "txn",
    "commit +2",
    "ACK",
]


def _labels(svg: str) -> list[str]:
    """The diagram's arrow and note labels, top to bottom (the rows' times and the lanes'
    names left out)."""
    texts = re.findall(r"<text [^>]*>(?:<title>[^<]*</title>)?([^<>]+)</text>", svg)
    lanes = set(re.findall(r'font-weight="600">([^<]+)</text>', svg))
    times = r"(≤?\d+\.\d{3} s( ↕)?|\+\d+\.\d{2} s)"
    return [t for t in texts if not re.fullmatch(times, t) and t not in lanes]


def test_the_stamps_alone_would_draw_the_publish_first() -> None:
    """The control: without the rules the order is the clocks', and wrong."""
    by_stamp = [ev.kind for ev in sorted(EVENTS, key=lambda ev: ev.time)]
    assert by_stamp.index("publish") < by_stamp.index("txn")


def test_skewed_clocks_are_drawn_in_happens_before_order() -> None:
    view = TaskView(task_id="t1", events=list(EVENTS), ops=[CREATE], bands=[], writes=tuple(WRITES))
    svg = sequence_svg(view)
    assert _labels(svg) == CAUSAL
    # the api's transaction, logged 105 ms after etcd answered it, is drawn where etcd's
    # record puts it, and shows its own stamp, marked
    assert "3.125 s ↕" in svg and "stamped 3.125 s by n2&#x27;s clock" in svg
    # and the relay's publish, stamped before it and drawn after it
    assert "3.056 s ↕" in svg
    # rows in their clocks' order are not marked
    assert "3.705 s<" in svg and "3.705 s ↕" not in svg
    rows = step_rows(view)
    assert [r[2] for r in rows] == [
        "txn", "task-accepted", "publish", "marked-published", "delivery", "txn", "commit", "ack"
    ]  # fmt: skip


def test_without_etcds_record_the_broker_and_the_outbox_still_order_it() -> None:
    """A run stored before the journal: the accepted task before its relay's publish, the
    publish before its delivery, by the rules alone."""
    view = TaskView(task_id="t1", events=list(EVENTS), ops=[CREATE], bands=[])
    got = _labels(sequence_svg(view))
    assert got.index("txn: task + idem + outbox") < got.index("publish #1 → seq 1")
    assert got.index("publish #1 → seq 1") < got.index("deliver #1") < got.index("commit +2")


def test_a_redelivery_on_a_clock_behind_is_drawn_after_the_first_delivery() -> None:
    events = [
        _ev(1.00, "n3", "relay", "publish", 20, attempt=1, stream_seq=4),
        _ev(1.10, "n1", "worker", "delivery", 30, num_delivered=1, stream_seq=4),
        # n2's clock is 2 s behind: its redelivery is stamped before the first delivery
        _ev(0.40, "n2", "worker", "delivery", 31, num_delivered=2, stream_seq=4),
        _ev(0.90, "n2", "worker", "commit", 31, amount=2),
    ]
    at = causal_times(events, [])
    order = sorted(range(len(events)), key=at.__getitem__)
    assert order == [0, 1, 2, 3]
    # times grow along the order; an event in place keeps its stamp
    assert at[0] == 1.00 and at[1] == 1.10 and at[1] < at[2] < at[3]


def test_a_contradiction_still_draws_every_event() -> None:
    """The process says one order, the revisions the other: a cycle, broken at a stamp."""
    events = [
        _ev(1.0, "n1", "worker", "txn", 30, fn="complete", n=1, ok=True, rev=9),
        _ev(2.0, "n1", "worker", "txn", 30, fn="complete", n=2, ok=True, rev=3),
    ]
    at = causal_times(events, [])
    assert set(at) == {0, 1}


def test_the_journal_writes_of_a_task_are_those_naming_its_keys() -> None:
    final = {
        "journal": {
            "entries": [
                {"node": "n2", "revision": 4, "outcome": "ok", "succeeded": True, "time": 3.02,
                 "puts": [{"key": "/lab3/tasks/t1"}, {"key": f"/lab3/outbox/{E}"}]},
                {"node": "n3", "revision": 5, "outcome": "ok", "succeeded": True, "time": 3.03,
                 "puts": [{"key": "/lab3/tasks/t11"}]},
                {"node": "n3", "revision": 6, "outcome": "ok", "succeeded": False, "time": 3.04,
                 "puts": [{"key": f"/lab3/outbox-claim/{E}"}]},
                {"node": "n3", "revision": 7, "outcome": "ok", "succeeded": True, "time": 3.05,
                 "puts": [], "deletes": [{"key": f"/lab3/outbox-claim/{E}"}]},
            ]
        }
    }  # fmt: skip
    got = task_writes(writes_by_name(read_journal(final)), {"t1", E})
    assert [w.revision for w in got] == [4, 7]


def test_a_real_runs_task_is_drawn_in_etcds_order() -> None:
    """Recorded on Docker (tests/fixtures/causal_seed7_t2.json, from the run its "source"
    names): the api logged its create transaction at 12.536 s, 181 ms after etcd answered it
    (its proxy's journal: revision 5 at 12.355 s), and the relay had published the entry at
    12.439 s, after its own writes at revisions 16 and 18."""
    doc = json.loads(FIXTURE.read_text())
    events: list[EventLike] = [
        EventRow(x["time"], x["node"], x["component"], x["kind"], x.get("task_id"),
                 x.get("event_id"), x.get("pid"), x.get("data") or {})
        for x in doc["events"]
    ]  # fmt: skip
    ops = [ClientOp(**o, retried=()) for o in doc["ops"]]
    writes = tuple(Write(**w) for w in doc["writes"])
    by_stamp = [ev.kind for ev in sorted(events, key=lambda ev: ev.time)]
    assert by_stamp.index("publish") < by_stamp.index("txn")  # the clocks' order: wrong
    view = TaskView(task_id="t2", events=events, ops=ops, bands=[], writes=writes)
    got = _labels(sequence_svg(view))
    assert got[:4] == ["create(amount=3)", "txn", "txn: task + idem + outbox", "publish #1 → seq 3"]
    assert got.index("deliver #1") < got.index("commit +3") < got.index("ACK")


def test_a_publish_waits_for_the_acceptance_of_its_own_event_only() -> None:
    """A create accepted twice under two event ids (non-idempotent create): each relay publish
    follows the acceptance that wrote its entry, not the other one."""
    events = [
        EventRow(1.0, "n1", "api", "task-accepted", "t1", "e1", 10, {"new": True}),
        EventRow(5.0, "n2", "api", "task-accepted", "t1", "e2", 11, {"new": True}),
        EventRow(1.2, "n3", "relay", "publish", "t1", "e1", 20, {"stream_seq": 1}),
        EventRow(5.2, "n3", "relay", "publish", "t1", "e2", 20, {"stream_seq": 2}),
    ]
    at = causal_times(events, [])
    assert sorted(range(4), key=at.__getitem__) == [0, 2, 1, 3]
    assert at[2] == 1.2  # not pushed after the second acceptance
