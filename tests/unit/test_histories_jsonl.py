"""The JSONL history: written line by line; broken lines reported with their number, never raised."""

from __future__ import annotations

from pathlib import Path

from chaos.histories.jsonl import HistoryRecorder, read_history
from chaos.histories.ops import NEMESIS, Op, OpType, pair_index


def test_recorder_round_trips_ops(tmp_path: Path) -> None:
    clock = iter([0.5, 0.7, 0.9])
    rec = HistoryRecorder(tmp_path / "h.jsonl", lambda: next(clock))
    rec.record(process=0, type=OpType.INVOKE, f="create", value={"task_id": "t1"})
    rec.record(process=0, type=OpType.INFO, f="create", value=None, error="timeout",
               extra={"node": "n1"})  # fmt: skip
    rec.record(process=NEMESIS, type=OpType.INFO, f="pause", extra={"fault_id": 1})
    rec.close()
    loaded = read_history(tmp_path / "h.jsonl")
    assert loaded.problems == []
    assert loaded.records == rec.ops
    assert loaded.records[1].extra == {"node": "n1"} and loaded.records[1].error == "timeout"


def test_bad_and_truncated_lines_are_reported_and_the_rest_kept(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    good = '{"index":0,"time":0.1,"process":0,"type":"invoke","f":"x","value":1}'
    p.write_text(
        '{"format":"chaos.history","version":1}\n'
        f"{good}\n"
        "not json\n"
        '{"index":1,"time":0.2,"process":0,"type":"bogus","f":"x"}\n'
        '{"index":2,"time":0.3,"process":0,"f":"x"}\n'
        '{"index":3,"time":0.4,"pro'
    )
    loaded = read_history(p)
    assert [o.index for o in loaded.records] == [0]
    lines = [(pr.line, pr.truncated) for pr in loaded.problems]
    assert lines == [(3, False), (4, False), (5, False), (6, True)]
    assert "missing field 'type'" in loaded.problems[2].message
    assert "truncated" in str(loaded.problems[3])


def test_newer_format_version_is_refused_with_advice(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text('{"format":"chaos.history","version":99}\n')
    loaded = read_history(p)
    assert "upgrade chaos" in loaded.problems[0].message


def test_pairing_by_process() -> None:
    h = [
        Op(index=0, time=0, process=0, type=OpType.INVOKE, f="a"),
        Op(index=1, time=0, process=1, type=OpType.INVOKE, f="a"),
        Op(index=2, time=0, process=1, type=OpType.OK, f="a"),
        Op(index=3, time=0, process=0, type=OpType.INFO, f="a"),
        Op(index=4, time=0, process=2, type=OpType.INVOKE, f="a"),
    ]
    assert pair_index(h) == {1: 2, 0: 3}


def test_run_folders_made_in_parallel_all_exist_and_latest_points_at_one(tmp_path: Path) -> None:
    import threading

    from chaos.histories.store import new_run_dir

    made: list[Path] = []
    errors: list[BaseException] = []

    def make() -> None:
        try:
            for _ in range(20):
                made.append(new_run_dir(tmp_path, "lab3"))
        except BaseException as e:  # collected: the assertion below names it
            errors.append(e)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(made)) == 80 and all(p.is_dir() for p in made)
    assert (tmp_path / "latest").resolve() in {p.resolve() for p in made}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".latest")]
