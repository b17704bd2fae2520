"""Red team against chaos itself, on hand-made inputs (issue 29): what a solution writes must not
hurt the orchestrator — no ``RecursionError`` from a deep event line, etcd value or journal line,
a record held within its bound, a flooded events folder listed no further than its quota — and a
run whose reads failed is never "the final state read". The real runs are
``tests/integration/test_redteam_bounded.py``.
"""

from __future__ import annotations

import io
import itertools
import json
import tarfile
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers import journal
from chaos.checkers.completeness import completeness
from chaos.checkers.verdict import Verdict
from chaos.cluster.docker.cluster import _a_log, _ChunkReader
from chaos.core.live import EventTail
from chaos.histories.limits import MAX_EVENT_FILES, TooDeep, loads_bounded, nesting
from chaos.histories.ops import Op, OpType
from chaos.histories.store import StoredRun
from chaos.workloads.lab3 import checkers, keys
from chaos.workloads.systems import etcd_proxy, etcd_record, record_values
from tests.unit.test_etcd_record import Client, PutEvent, Response
from tests.unit.test_lab3_accounting import exactly_once
from tests.unit.test_lab3_checkers import ONCE_EACH, record

DEEP_LIST = "[" * 30_000 + "]" * 30_000
DEEP_DICT = '{"a": ' * 30_000 + "1" + "}" * 30_000


# ---------------------------------------------------------------- one bounded parser


@pytest.mark.parametrize(
    "text", [DEEP_LIST, DEEP_DICT, "[" * 101 + "]" * 101], ids=["list", "dict", "101"]
)
def test_a_value_nested_past_the_limit_is_refused_before_any_parser_recurses(text: str) -> None:
    with pytest.raises(TooDeep, match="nest more than 100 levels"):
        loads_bounded(text)
    assert isinstance(TooDeep("x"), ValueError)  # every caller's `except ValueError` takes it


def test_brackets_inside_strings_do_not_count_and_the_limit_itself_is_read() -> None:
    assert loads_bounded("[" * 100 + "]" * 100) is not None
    quoted = json.dumps(["[[[{{{" * 500, '\\"[[[' * 100])
    assert nesting(quoted.encode()) <= 2
    assert loads_bounded(quoted)[0].startswith("[[[{{{")


# ---------------------------------------------------------------- the event tail


def _line(kind: str, mono: float = 1.0) -> str:
    return json.dumps({"mono": mono, "node": "n1", "component": "worker", "kind": kind})


def test_a_deep_event_line_is_skipped_and_named_and_the_lines_after_it_are_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "n1-worker.jsonl").write_text(
        "\n".join([_line("before"), DEEP_LIST, DEEP_DICT, _line("after", 2.0)]) + "\n"
    )
    tail = EventTail(tmp_path, 0.0)
    got = tail.poll()  # on main: RecursionError out of the tail, the orchestrator's exit 5
    assert [e.kind for e in got] == ["before", "after"]
    assert tail.problems == [
        "n1-worker.jsonl: a line skipped, values nest more than 100 levels deep (chaos reads 100)"
    ]
    assert tail.over_quota is None  # narration cut by one line, not a quota


def test_a_flooded_events_folder_is_listed_no_further_than_its_quota(tmp_path: Path) -> None:
    events = tmp_path / "events"
    events.mkdir()
    (events / "n1-worker.jsonl").write_text(_line("commit") + "\n")
    for i in range(MAX_EVENT_FILES - 1):
        (events / f"zz-{i}.jsonl").touch()
    tail = EventTail(tmp_path, 0.0)
    assert [e.kind for e in tail.poll()] == ["commit"]  # at the quota: read, not over it
    assert tail.over_quota is None
    (events / "zz-one-more.jsonl").touch()
    (events / "n1-worker.jsonl").write_text(_line("commit") + "\n" + _line("late") + "\n")
    assert tail.poll() == []
    assert tail.over_quota == (
        f"the code under test wrote more than {MAX_EVENT_FILES} files in live/events; "
        "the rest was not read"
    )
    assert tail.poll() == []  # past the quota the tail lists nothing more


# ---------------------------------------------------------------- etcd values


def test_a_deep_etcd_value_is_kept_as_its_reason_by_every_reader() -> None:
    deep = ("[" * 2000 + "]" * 2000).encode()
    value = record_values.decode(deep)  # on main: RecursionError, every final read failed
    assert value == {record_values.UNREAD: "nested more than 32 levels deep"}
    assert record_values.int_problem(value) == "too deep to read"
    assert record_values.describe(value) == "a value nested more than 32 levels deep (not kept)"
    # the proxies' journal, read by the checkers, reads it to the same marker
    assert journal.decode(deep.decode()) == value
    assert record_values.decode(b"[" * 32 + b"]" * 32) is not None  # the limit itself is read


def test_a_deep_task_record_in_the_record_is_named_by_revision() -> None:
    deep = record_values.decode(("[" * 2000 + "]" * 2000).encode())  # 4,000 bytes: kept
    applies = [t["puts"] for t in ONCE_EACH["txns"][4:]]
    got = exactly_once(record(*applies, {keys.task("deep"): deep}))
    assert got.verdict is Verdict.INVALID
    assert got.summary == (
        "rev 8 wrote /lab3/tasks/deep (a task) as a value nested more than 32 levels deep "
        "(not kept): too deep to read"
    )
    assert exactly_once(ONCE_EACH).verdict is Verdict.VALID  # the control


def test_a_deep_journal_line_is_a_problem_never_an_exception() -> None:
    good = json.dumps({"node": "n1", "seq": 1, "method": "Put", "outcome": "ok"})
    raw = ("\n".join([good, DEEP_LIST, good]) + "\n").encode()
    out: dict[str, Any] = {"entries": [], "problems": [], "nodes": {}, "unread": {}}
    assert etcd_proxy._lines("n1", raw, 0.0, out) == 2
    assert out["problems"] == ["n1: journal line 2 is not JSON"]


# ---------------------------------------------------------------- the record's memory


class Many(Client):
    """``n`` writes of ``value`` under ``/lab3/big/``, in answers of 1,000 revisions as etcd
    sends them, made as the watch reads them."""

    def __init__(self, n: int, value: bytes) -> None:
        super().__init__([])
        self.n, self.value = n, value

    def watch_prefix_response(self, prefix: str, start_revision: int) -> tuple[Any, Any]:
        assert self.marker is not None
        rev = itertools.count(start_revision)
        key, nonce = self.marker

        def answers() -> Any:
            for b in range(0, self.n, 1000):
                yield Response([PutEvent(f"/lab3/big/{i}".encode(), self.value, next(rev))
                                for i in range(b, min(self.n, b + 1000))])  # fmt: skip
            yield Response([PutEvent(key.encode(), nonce.encode(), next(rev))])

        return answers(), lambda: None


def _held(client: Client) -> tuple[dict[str, Any], int]:
    tracemalloc.start()
    try:
        rec = etcd_record.replay(client, "/lab3/", 10, timeout=60)
        return rec, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_a_record_of_deep_3kb_values_holds_each_as_its_reason() -> None:
    # the measured attack: 10,732 revisions of a 3 KB nested value took main to 998 MB
    rec, held = _held(Many(10_732, ("[" * 1500 + "]" * 1500).encode()))
    assert rec["error"] is None and rec["truncated"] is False and len(rec["txns"]) == 10_732
    assert rec["txns"][0]["puts"] == {"/lab3/big/0": {record_values.UNREAD: (
        "nested more than 32 levels deep")}}  # fmt: skip
    assert held < 16 << 20, held


def test_a_record_past_its_memory_bound_is_cut_and_says_where() -> None:
    wide = ("[" + ",".join(["[1]"] * 700) + "]").encode()  # 2.8 KB, 1,400 parts
    rec, held = _held(Many(5_000, wide))
    assert rec["truncated"] is True and 0 < len(rec["txns"]) < 5_000
    assert rec["truncated_why"].startswith(f"{etcd_record.MAX_RECORD_BYTES >> 20} MiB of values")
    assert held < 2 * etcd_record.MAX_RECORD_BYTES, held
    why = record_values.unusable(rec)
    assert why is not None and "MiB of values to hold (revision" in why
    # a record cut by memory is judged as one cut by its event count: unknown, with the reason
    r = checkers.exactly_once(checkers.model_of(_run({"counter": 0, "tasks": {}, "record": rec})))
    assert r.verdict is Verdict.UNKNOWN and "MiB of values to hold" in r.summary


# ---------------------------------------------------------------- complete-record


OP = Op(index=0, time=0.0, process=0, type=OpType.OK, f="read", value=1)


def _run(final: dict[str, Any]) -> StoredRun:
    return StoredRun(path=Path("r"), spec={}, history=[OP], events=[], final=final, schedule=[],
                     problems=[])  # fmt: skip


GOOD_RECORD = {"source": "etcd", "from_revision": 1, "txns": [], "error": None, "truncated": False}


@pytest.mark.parametrize(
    "final,says",
    [
        ({"error": "RecursionError: maximum recursion depth exceeded"},
         "the final reads failed: RecursionError: maximum recursion depth exceeded"),
        ({"counter": 1, "record": {**GOOD_RECORD, "error": "StatusCode.RESOURCE_EXHAUSTED"}},
         "etcd's record of the run was not read: StatusCode.RESOURCE_EXHAUSTED"),
        ({"counter": 1, "record": {**GOOD_RECORD, "truncated": True,
                                   "truncated_why": "32 MiB of values to hold (revision 9)"}},
         "etcd's record of the run was cut after 32 MiB of values to hold (revision 9)"),
        ({"counter": 1, "record": GOOD_RECORD,
          "journal": {"unread": {"n2": "journal cut at 16777216 bytes"}}},
         "the etcd proxy's journal of n2 was not read: journal cut at 16777216 bytes"),
    ],
)  # fmt: skip
def test_complete_record_names_each_failed_read_and_is_never_valid_then(
    final: dict[str, Any], says: str
) -> None:
    r = completeness(_run(final))
    assert r.verdict is Verdict.UNKNOWN and says in r.summary, r.summary
    # the control: the same final state with every read done
    ok = {"counter": 1, "record": GOOD_RECORD, "journal": {"unread": {}}}
    assert completeness(_run(ok)).verdict is Verdict.VALID


# ---------------------------------------------------------------- collecting from the nodes


def test_a_nodes_logs_are_read_as_a_stream_keeping_only_the_logs() -> None:
    buf = io.BytesIO()
    files = [("chaos/api.log", b"a" * 70_000), ("chaos/etcd-proxy/journal.jsonl", b"j" * 300_000),
             ("chaos/worker.log", b"w")]  # fmt: skip
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    chunks = iter([raw[i : i + 7777] for i in range(0, len(raw), 7777)])
    reader = _ChunkReader(chunks)
    kept = {}
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for m in tar:
            if m.isreg() and _a_log(m.name):
                fh = tar.extractfile(m)
                assert fh is not None
                kept[m.name] = fh.read(50_000)  # each cut at its cap
    reader.drain()
    assert kept == {"chaos/api.log": b"a" * 50_000, "chaos/worker.log": b"w"}
    assert next(chunks, None) is None  # the stream was read to its end


# ---------------------------------------------------------------- the other readers of it


def test_a_deep_claim_a_deep_journalled_value_and_a_deep_ssh_event_line_are_no_crash(
    tmp_path: Path,
) -> None:
    from chaos.cluster.ssh.events import convert
    from chaos.core.context import read_claim
    from chaos.report.final_state import _decoded

    claim = tmp_path / "claim"
    claim.write_text("[" * 2000 + "]" * 2000)  # within the claim's 4096 bytes
    assert read_claim(claim) is None  # refused as a claim that is not JSON
    claim.write_text(json.dumps({"node": "n1", "component": "worker", "pid": 7}))
    assert read_claim(claim) is not None  # the control
    deep = "[" * 2000 + "]" * 2000
    assert _decoded(deep, None) == deep  # the report shows it as the text it is
    assert _decoded("[1]", None) == [1]
    line = DEEP_LIST.encode()
    assert convert(line, None) == DEEP_LIST + "\n"  # passed on as it is; the tail names it
