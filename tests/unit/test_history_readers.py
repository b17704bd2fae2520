"""History readers (chaos JSONL, Jepsen EDN, Jepsen log lines): fuzzed so that no input gives a
traceback, a malformed line is reported with its number, a truncated last line is reported and
the rest is still read; and EDN export round-trips."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chaos.checkers.offline import _jsonl_rows, load_any_history
from chaos.histories import edn, jepsen_log
from chaos.histories.jsonl import read_history
from chaos.histories.limits import MAX_DEPTH
from chaos.histories.ops import NEMESIS, Op, OpType
from tests.corpus import PORCUPINE
from tests.fuzz import examples

FUZZ = settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# Whole histories cost more to draw; fewer examples keep the unit suite fast.
FUZZ_OPS = settings(
    max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# ----------------------------------------------------------------- strategies

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_KNOWN = {"index", "time", "process", "type", "f", "value", "error"}
extra_keys = st.text("abcdefghjklmnpqrsuwxyz_-", min_size=1, max_size=8).filter(
    lambda k: k not in _KNOWN
)


@st.composite
def ops(draw: st.DrawFn, n_max: int = 12) -> list[Op]:
    out = []
    for i in range(draw(st.integers(0, n_max))):
        out.append(
            Op(
                index=i,
                time=draw(st.integers(0, 10**12)) / 1e6,
                process=draw(st.integers(0, 50) | st.just(NEMESIS)),
                type=draw(st.sampled_from(list(OpType))),
                f=draw(st.text(min_size=1, max_size=10)),
                value=draw(values),
                error=draw(st.none() | st.text(max_size=20)),
                extra=draw(st.dictionaries(extra_keys, values, max_size=3)),
            )
        )
    return out


def jsonl_text(history: list[Op]) -> str:
    lines = [json.dumps({"format": "chaos.history", "version": 1})]
    lines += [json.dumps(op.to_json()) for op in history]
    return "\n".join(lines) + "\n"


junk_line = st.text(max_size=40).filter(lambda s: "\n" not in s and "\r" not in s)

# ----------------------------------------------------------------------- JSONL


@FUZZ
@given(st.lists(junk_line | st.builds(json.dumps, values), max_size=20), st.booleans())
def test_jsonl_readers_never_raise_and_agree(lines: list[str], newline_at_end: bool) -> None:
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "history.jsonl"
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        slow = read_history(path)
        rows, problems = _jsonl_rows(path)
    assert rows.count == len(slow.records) or any("process" in p.message for p in problems)
    n_lines = len(text.split("\n"))
    for p in problems + slow.problems:
        assert 1 <= p.line <= n_lines
    # The lean reader rejects what the Op reader rejects (and also odd process values).
    assert {p.line for p in slow.problems} <= {p.line for p in problems}


@FUZZ_OPS
@given(ops(), st.data())
def test_jsonl_malformed_line_reported_with_its_number(history: list[Op], data: Any) -> None:
    lines = jsonl_text(history).splitlines()
    at = data.draw(st.integers(1, len(lines)))  # 0-based position of the bad line
    bad = '{"index": 1e400, "time": 0, "process": 0, "type": "ok", "f": "w"}'
    lines.insert(at, data.draw(st.sampled_from(["{oops", "[1, 2]", '{"index": 1}', "nul", bad])))
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "h.jsonl"
        path.write_text("\n".join(lines) + "\n")
        loaded = read_history(path)
        rows, problems = _jsonl_rows(path)
    assert [p.line for p in loaded.problems] == [at + 1]
    assert [p.line for p in problems] == [at + 1]
    assert loaded.records == history and rows.count == len(history)


@FUZZ_OPS
@given(ops(n_max=8).filter(bool), st.data())
def test_jsonl_truncated_last_line(history: list[Op], data: Any) -> None:
    text = jsonl_text(history)
    last = text.rstrip("\n").split("\n")[-1]
    cut = data.draw(st.integers(1, len(last) - 1))
    broken = text[: len(text) - 1 - len(last) + cut]
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "h.jsonl"
        path.write_text(broken)
        loaded = read_history(path)
        rows, problems = _jsonl_rows(path)
    assert loaded.records == history[:-1]
    assert rows.count == len(history) - 1
    for found in (loaded.problems, problems):
        assert len(found) == 1 and found[0].truncated
        assert found[0].line == len(history) + 1


# ------------------------------------------------------------------------- EDN


@FUZZ
@given(values)
def test_edn_values_round_trip(v: Any) -> None:
    assert edn.loads(edn.dumps(v)) == v


@FUZZ_OPS
@given(ops())
def test_edn_history_round_trips(history: list[Op]) -> None:
    text = "".join(edn.iter_history_lines(history))
    got, problems = edn.read_history_text(text)
    assert problems == []
    assert got == history


@FUZZ_OPS
@given(ops(n_max=6))
def test_edn_vector_form_and_pretty_printed_maps(history: list[Op]) -> None:
    maps = [edn.op_to_edn(op) for op in history]
    vector = "[" + "\n ".join(maps) + "]\n"
    assert edn.read_history_text(vector) == (history, [])
    spread = "[" + "\n".join(m.replace(", :", ",\n  :") for m in maps) + "]"
    assert edn.read_history_text(spread) == (history, [])


@FUZZ
@given(st.text(max_size=200))
def test_edn_reader_never_raises(text: str) -> None:
    _, problems = edn.read_history_text(text)
    n_lines = text.count("\n") + 1
    for p in problems:
        assert 1 <= p.line <= n_lines


@FUZZ
@given(st.lists(st.sampled_from(list('{}[]()#_:;"\\ ,\nabc1.-^@~`')), max_size=80))
def test_edn_reader_never_raises_on_delimiter_soup(chars: list[str]) -> None:
    text = "".join(chars)
    edn.read_history_text(text)
    with contextlib.suppress(edn.EdnError):
        edn.loads(text)


def test_edn_deep_nesting_is_an_error_not_a_crash() -> None:
    text = "[" * 100_000
    _, problems = edn.read_history_text(text)
    assert problems and problems[0].line == 1
    # nesting is bounded (docs/history-format.md): at the bound it reads, past it an EdnError
    assert edn.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(edn.EdnError, match="nest deeper than"):
        edn.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(edn.EdnError, match="nest deeper than"):
        edn.loads("#a " * 100_000 + "1")  # tags nest too (they were quadratic in memory)


@FUZZ_OPS
@given(ops(n_max=8), st.data())
def test_edn_malformed_line_reported_and_rest_read(history: list[Op], data: Any) -> None:
    lines = [edn.op_to_edn(op) for op in history]
    at = data.draw(st.integers(0, len(lines)))
    bad = data.draw(
        st.sampled_from(
            [
                "{:type :ok",
                "{:type :bogus, :f :x, :process 1}",
                "[1 2",
                "{:a 1 :b}",
                "12",
                '"unterminated',
            ]
        )
    )
    # "[" first opens the history's vector, a shape of its own (test_edn_reader.py); an open
    # string runs on over lines (EDN strings may) to the next quote, which no reader can tell
    # was not meant: only as the last line is its damage one line.
    assume(not (at == 0 and bad.startswith("[")))
    assume(not (bad.startswith('"') and at < len(lines)))
    lines.insert(at, bad)
    got, problems = edn.read_history_text("\n".join(lines) + "\n")
    assert [p.line for p in problems] == [at + 1]
    assert [(o.process, o.type, o.f, o.value) for o in got] == [
        (o.process, o.type, o.f, o.value) for o in history
    ]


@FUZZ_OPS
@given(ops(n_max=8).filter(bool), st.data())
def test_edn_truncated_last_line(history: list[Op], data: Any) -> None:
    lines = [edn.op_to_edn(op) for op in history]
    cut = data.draw(st.integers(1, len(lines[-1]) - 1))
    text = "\n".join([*lines[:-1], lines[-1][:cut]])
    got, problems = edn.read_history_text(text)
    assert got == history[:-1]
    assert len(problems) == 1 and problems[0].truncated and problems[0].line == len(history)


def test_edn_syntax() -> None:
    v = edn.loads(
        '{:a [1 -2 3N 1.5 2e3 7.5M nil true false] :b #{1 [2 3]} "s\\n\\u00e9" #inst "2020" '
        ":c ##Inf :d (1 2) #_ :skipped :e \\a :f :ns/kw ; comment\n :g ##-Inf}"
    )
    assert v["a"] == [1, -2, 3, 1.5, 2000.0, 7.5, None, True, False]
    assert v["b"] == frozenset({1, (2, 3)})
    assert v["s\né"].tag == "inst" and v["s\né"] == '#inst "2020"'
    assert (
        v["c"] == math.inf and v["g"] == -math.inf and v["e"] == edn.Char("a") and v["f"] == "ns/kw"
    )
    assert isinstance(v["f"], edn.Keyword) and v["d"] == [1, 2]
    assert edn.dumps(edn.loads('#inst "2020"')) == '#inst "2020"'
    for bad in ["{:a}", "[1 2", "(]", '"abc', ":", "08", "##Nope", "#{1} extra"]:
        with pytest.raises(edn.EdnError):
            edn.loads(bad)


def test_edn_jepsen_shapes() -> None:
    text = (
        "{:type :invoke, :f :read, :value nil, :process 0, :time 1000, :index 0}\n"
        "#jepsen.history.Op{:type :ok, :f :read, :value 3, :process 0, :time 2500, :index 1}\n"
        '{:type :info, :f :start, :value nil, :process :nemesis, :error [:timeout "x"]}\n'
    )
    got, problems = edn.read_history_text(text)
    assert problems == []
    assert [(o.index, o.time, o.process, o.type.value, o.value) for o in got] == [
        (0, 1e-6, 0, "invoke", None),
        (1, 2.5e-6, 0, "ok", 3),
        (2, 0.0, NEMESIS, "info", None),
    ]
    assert got[2].error == '[:timeout "x"]'


# ------------------------------------------------------------------ log lines


@FUZZ
@given(st.lists(junk_line, max_size=20))
def test_log_reader_never_raises(lines: list[str]) -> None:
    text = "\n".join(lines)
    got, problems = jepsen_log.read_log_text(text)
    for p in problems:
        assert 1 <= p.line <= len(lines)
    # history.txt mode: every non-blank line is an op or a reported problem
    if not any("jepsen.util" in line for line in lines):
        assert len(got) + len(problems) == sum(1 for line in lines if line.strip())


def test_log_lines_jepsen_and_history_txt() -> None:
    text = (
        "2017-03-27 10:16:03,539{GMT}\tINFO\t[jepsen worker 2] jepsen.util: 2\t:invoke\t:read\tnil\n"
        "INFO  jepsen.core - Running test\n"
        "2017-03-27 10:16:03,789{GMT}\tINFO\t[jepsen worker 2] jepsen.util: 2\t:ok\t:read\t4\n"
        "INFO  jepsen.util - 3   :invoke :cas    [3 0]\n"
        "INFO  jepsen.util - 3   :fail   :cas    [3 0]\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\t{:n1 [:n2]}\n"
        "INFO  jepsen.util - 4\t:info\t:write\t:timed-out\n"
        "INFO  jepsen.util - 5\t:bogus\t:write\t1\n"
    )
    got, problems = jepsen_log.read_log_text(text)
    assert [(o.process, o.type.value, o.f, o.value) for o in got] == [
        (2, "invoke", "read", None),
        (2, "ok", "read", 4),
        (3, "invoke", "cas", [3, 0]),
        (3, "fail", "cas", [3, 0]),
        (NEMESIS, "info", "start", {"n1": ["n2"]}),
        (4, "info", "write", "timed-out"),
    ]
    assert got[1].time == pytest.approx(0.25)
    assert [p.line for p in problems] == [8]
    hist, problems = jepsen_log.read_log_text("0\t:ok\t:read\t3\t:timeout\n1 :ok :write [1")
    assert hist[0].error == "timeout"
    assert len(problems) == 1 and problems[0].line == 2 and problems[0].truncated


@pytest.mark.corpus
def test_load_any_history_on_porcupine_files() -> None:
    root = PORCUPINE
    ops_log, p1 = load_any_history(root / "jepsen" / "etcd_001.log")
    ops_edn, p2 = load_any_history(root / "kv" / "c01-ok.txt")
    assert p1 == [] and p2 == [] and len(ops_log) > 100 and len(ops_edn) == 116
    empty, p3 = load_any_history(root / "jepsen" / "etcd_095.log")
    assert empty == [] and p3 == []


@FUZZ_OPS
@given(ops(n_max=30), st.data())
def test_lean_reader_blocks_agree_with_line_reader(history: list[Op], data: Any) -> None:
    """Small blocks force many msgspec blocks and line-by-line fallbacks in one file."""
    import tempfile

    from chaos.histories import reader

    # the reference: every line on its own, no block decoding
    by_line = reader.LineFormat(reader.HISTORY_FORMAT, Op.from_json)
    lines = jsonl_text(history).splitlines()
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(1, len(lines)))
        lines.insert(at, data.draw(st.sampled_from(["{oops", "", '{"index": 1}', "[]", "NaN"])))
    text = "\n".join(lines) + data.draw(st.sampled_from(["\n", "", '\n{"index": 7, "ti']))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "h.jsonl"
        path.write_text(text)
        saved = reader.BLOCK_BYTES
        reader.BLOCK_BYTES = data.draw(st.integers(1, 400))
        try:
            rows, problems = _jsonl_rows(path)
            blocks = read_history(path)
        finally:
            reader.BLOCK_BYTES = saved
        loaded = reader.read_records(path, by_line)
    assert blocks == loaded
    assert [(p.line, p.truncated) for p in problems] == [
        (p.line, p.truncated) for p in loaded.problems
    ]
    assert rows.count == len(loaded.records)
    got = sorted((r[0], f, r[1], r[2]) for f, lst in rows.by_f.items() for r in lst)
    got += sorted((r[0], f, r[1], r[2]) for f, lst in rows.nemesis.items() for r in lst)
    want = [(i, op.f, op.process, op.type.value) for i, op in enumerate(loaded.records)]
    assert sorted(got) == sorted(want)


odd_numbers = st.sampled_from(
    [
        "0",
        "-0",
        "1",
        "1.0",
        "1.5",
        "-3",
        "1e3",
        "1e400",
        "-1e400",
        "true",
        "null",
        '"2"',
        "12345678901234567890123",
        "1" + "0" * 400,
        "[1]",
        "{}",
    ]
)


@FUZZ
@given(
    st.lists(
        st.tuples(
            odd_numbers,
            odd_numbers,
            odd_numbers | st.just('"nemesis"'),
            st.sampled_from(['"invoke"', '"ok"', '"fail"', '"info"', '"bogus"', "1"]),
            st.sampled_from(['"read"', '"cas"', "7", "null", '""']),
            odd_numbers,
            odd_numbers | st.sampled_from(['"timeout"', '["a"]']),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_plain_history_lines_read_as_the_line_reader_reads_them(rows: list[Any]) -> None:
    """Lines of only Jepsen's seven keys, with odd values: msgspec's typed decode (the plain
    block path) must take exactly the values the line reader takes, or leave the block to it."""
    import tempfile

    from chaos.histories import reader

    keys = ("index", "time", "process", "type", "f", "value", "error")
    lines = [
        "{"
        + ",".join(
            f'"{k}":{v}' for k, v in zip(keys, row[:7], strict=True) if row[7] or k != "error"
        )
        + "}"
        for row in rows
    ]
    text = '{"format":"chaos.history","version":1}\n' + "\n".join(lines) + "\n"
    by_line = reader.LineFormat(reader.HISTORY_FORMAT, Op.from_json)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "h.jsonl"
        path.write_text(text)
        blocks = read_history(path)
        loaded = reader.read_records(path, by_line)
    assert blocks == loaded
    assert [repr(o) for o in blocks.records] == [repr(o) for o in loaded.records]


flat_atoms = st.sampled_from(
    [
        "nil",
        "true",
        "false",
        "0",
        "-12",
        "+7",
        "01",
        "5N",
        "1.5",
        ":kw",
        ":a/b",
        ":x#",
        '"s"',
        '"a\\"b"',
        '"\\n\\t"',
        '"\\q"',
        '"é"',
        "[1 2]",
        "[1 [2 3]]",
        "[nil,nil]",
        "[ ]",
        "[01]",
        "[-0 5]",
        "[1nil]",
        "[[1] [2 nil]]",
        "[[[1]]]",
        "[123456789012345678901234567890 -7]",
        "nilx",
        ":é",
        "{}",
    ]
)
flat_keys = st.sampled_from([":a", ":process", ":f", ":é", ":a.b", ":-", "a", '"k"'])


@FUZZ
@given(st.lists(st.tuples(flat_keys, flat_atoms), max_size=6), st.sampled_from([" ", ", ", ","]))
def test_edn_flat_map_fast_path_agrees_with_reader(pairs: list[tuple[str, str]], sep: str) -> None:
    text = "{" + sep.join(f"{k} {v}" for k, v in pairs) + "}"
    fast = edn._flat_map(text)
    try:
        slow = edn.loads(text)
    except edn.EdnError:
        assert fast is None
        return
    assert fast is None or (fast == slow and repr(fast) == repr(slow))


def test_edn_flat_map_vectors_never_backtrack() -> None:
    """A digit run is one item, never split: once 2**n ways to fail on "[111...1x]"."""
    import time

    t0 = time.perf_counter()
    for n in (30, 3000):
        assert edn._flat_map("{:a [" + "1" * n + "x]}") is None
        assert edn._flat_map("{:a [" + "1 " * n + "[2 " * 2 + "x]]}") is None
    assert time.perf_counter() - t0 < 5  # milliseconds; 2**30 steps would be hours


@FUZZ
@given(st.text(max_size=60))
def test_edn_flat_map_never_raises(text: str) -> None:
    fast = edn._flat_map(text)
    if fast is not None:
        assert fast == edn.loads(text)


# ------------------------------------------------- EDN op lines at JSON speed

# Pieces of Jepsen-shaped op lines: the fast path must read them as the general reader does,
# or decline. Odd ones (tags, sets, maps, chars, 42N, symbols, escapes) must make it decline.
edn_values = st.sampled_from(
    [
        "nil",
        "0",
        "-7",
        "12345678901234567890",
        "1.5",
        "-2e3",
        "true",
        "false",
        ":a",
        ":ns/kw-1",
        ":nil",
        ":null",
        '"s"',
        '""',
        '"a, :b c"',
        '"\\u00e9\\n\\"q\\""',
        '"nil"',
        '"\\/"',
        "[1 2]",
        "[3 [4 5]]",
        "[nil nil nil]",
        "[:a :b]",
        '[k "v"]',
        "(1 2)",
        "[]",
        "[1, 2]",
        "#{1}",
        "{:x 1}",
        "\\a",
        "42N",
        "sym",
        "null",
        '#inst "2020"',
        "[1  2]",
        # keywords the general reader refuses (a name ending in ":" or "/", or holding "::")
        ":a::b",
        "[1 :a:]",
        "[:a/ 1]",
        "[[:r 1 nil] [:append 2 3]]",
        "[[:r, 1 [1 2]]]",
    ]
)
edn_types = st.sampled_from([":invoke", ":ok", ":fail", ":info", '"ok"', ":bogus"])
edn_fs = st.sampled_from([":read", ":cas", ":cas-x", ":write", '"w"', "7", ":f", ":f::x", ":g/"])
edn_procs = st.sampled_from(["0", "13", ":nemesis", '"p"', "true", ":p:"])
edn_errors = st.sampled_from(
    [":timeout", '"refused: x"', '[:unknown "m"]', "nil", ":a.b/c", ":e::", "[:x: 1]"]
)
edn_times = st.sampled_from(["0", "1000", "-5", "9007199254740993", "1.5", "1e3"])


@st.composite
def edn_op_line(draw: st.DrawFn) -> str:
    entries = [(":type", draw(edn_types)), (":f", draw(edn_fs)), (":process", draw(edn_procs))]
    entries.append((":value", draw(edn_values)))
    if draw(st.booleans()):
        entries.append((":time", draw(edn_times)))
    if draw(st.integers(0, 4)):
        entries.append((":index", str(draw(st.integers(0, 10**6)))))
    if draw(st.booleans()):
        entries.append((":error", draw(edn_errors)))
    if not draw(st.integers(0, 4)):
        key = draw(st.sampled_from([":node", ":debug", ":value2", ":k::x", ":k/"]))
        entries.append((key, draw(edn_values)))
    entries = draw(st.permutations(entries))
    sep = draw(st.sampled_from([", ", ", ", " ", ","]))
    return "{" + sep.join(f"{k} {v}" for k, v in entries) + "}"


def _general(lines: list[str]) -> tuple[list[Op], list[Any]]:
    return edn.read_history_text("\n".join(lines) + "\n", "t", fast=False)


@FUZZ
@given(st.lists(edn_op_line(), min_size=1, max_size=6))
def test_edn_fast_block_agrees_with_general_reader(lines: list[str]) -> None:
    from chaos.histories.edn_fast import ops_from_block

    fast = ops_from_block(("\n".join(lines) + "\n").encode(), 0, edn.op_from_edn)
    slow, problems = _general(lines)
    if fast is not None:
        assert problems == []
        assert fast == slow
        # and the same types: a keyword stays a keyword, a string a string
        assert [repr(o.value) for o in fast] == [repr(o.value) for o in slow]
        assert [type(o.time) for o in fast] == [type(o.time) for o in slow]


def test_edn_fast_block_takes_jepsen_lines_and_declines_odd_ones() -> None:
    from chaos.histories.edn_fast import ops_from_block

    jepsen = (
        b"{:type :invoke, :f :cas, :value [3 [1 2]], :time 1000, :process 5, :index 0}\n"
        b"{:type :info, :f :cas, :value [3 [1 2]], :time 2000, :process 5, :index 1, "
        b":error :timeout}\n"
        b"{:type :ok, :f :read, :value [3 nil], :time 3000, :process :nemesis, :index 2, "
        b':node "n1"}\n'
    )
    got = ops_from_block(jepsen, 0, edn.op_from_edn)
    assert got is not None
    assert [(o.index, o.time, o.value, o.error) for o in got] == [
        (0, 1e-6, [3, [1, 2]], None),
        (1, 2e-6, [3, [1, 2]], "timeout"),
        (2, 3e-6, [3, None], None),
    ]
    assert got[2].process == NEMESIS and got[2].extra == {"node": "n1"}
    for odd in [
        b"{:type :ok, :f :read, :value #{1}, :process 0, :index 0}\n",
        b"{:type :ok, :f :read, :value {:a 1}, :process 0, :index 0}\n",
        b"{:type :ok, :f :read, :value 42N, :process 0, :index 0}\n",
        b"{:type :ok, :f :read, :value x, :process 0, :index 0}\n",
        b"{:type :ok, :f :read, :value 1, :process 0, :index 0} ; comment\n",
    ]:
        assert ops_from_block(odd, 0, edn.op_from_edn) is None, odd


def test_edn_blocks_keep_line_numbers_and_vector_form(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny blocks: every block boundary, fast or general, must keep counting lines.
    monkeypatch.setattr(edn, "_BLOCK", 200)
    good = [
        f"{{:type :invoke, :f :write, :value [{i} {i}], :time {i}, :process 1, :index {i}}}"
        for i in range(40)
    ]
    lines = list(good)
    lines[17] = "{:type :ok, :f :write, :value [1"  # broken
    lines[31] = "{:type :bogus, :f :write, :value 1, :process 1, :index 31}"
    ops, problems = edn.read_history_text("\n".join(lines) + "\n")
    assert [(p.line, p.truncated) for p in problems] == [(18, False), (32, False)]
    assert [o.index for o in ops] == [i for i in range(40) if i not in (17, 31)]
    # the vector form, across blocks, and its missing "]"
    vector = "[" + "\n ".join(good) + "]\n"
    assert edn.read_history_text(vector) == edn.read_history_text("\n".join(good))
    ops, problems = edn.read_history_text("[" + "\n ".join(good) + "\n")
    assert len(ops) == 40 and [p.message for p in problems] == [
        "history vector is not closed with ]"
    ]
    # a truncated last line, in the last block
    ops, problems = edn.read_history_text("\n".join(good) + "\n" + good[0][:25])
    assert len(ops) == 40 and [(p.line, p.truncated) for p in problems] == [(41, True)]


def test_edn_read_history_file_streams_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(edn, "_BLOCK", 300)
    lines = [
        f"{{:type :ok, :f :read, :value {i}, :time {i}, :process 1, :index {i}}}" for i in range(50)
    ]
    lines[40] = lines[40].replace(":value 40", ':value "\xe9"')
    path = tmp_path / "history.edn"
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data.replace("\xe9".encode(), b"\xff"))  # not UTF-8 on line 41
    ops, problems = edn.read_history(path)
    assert len(ops) == 50
    assert [(p.line, p.message) for p in problems] == [(41, "bytes that are not UTF-8")]
    assert ops[40].value == "\ufffd"
    clean, _ = edn.read_history_text("\n".join(lines) + "\n")
    assert ops[:40] == clean[:40] and ops[41:] == clean[41:]


kw_names = st.from_regex(r"[a-z][a-z0-9\-.]{0,6}(/[a-z][a-z0-9\-]{0,4})?", fullmatch=True)
jepsen_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | kw_names.map(edn.Keyword),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(OpType)),
            kw_names,
            st.integers(0, 30) | st.just(NEMESIS),
            jepsen_values,
            st.none() | st.text(max_size=10) | kw_names.map(edn.Keyword),
            st.integers(0, 2**50),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_edn_fast_block_on_written_jepsen_ops(rows: list[tuple[Any, ...]]) -> None:
    """Lines as Jepsen prints them (key order, ", " between entries), with any strings and
    keywords: the fast path must agree with the general reader whenever it answers."""
    from chaos.histories.edn_fast import ops_from_block

    lines = []
    for i, (typ, f, p, v, err, t) in enumerate(rows):
        proc = ":nemesis" if p == NEMESIS else str(p)
        line = f"{{:type :{typ.value}, :f :{f}, :value {edn.dumps(v)}, :time {t}, "
        line += f":process {proc}, :index {i}"
        line += "}" if err is None else f", :error {edn.dumps(err)}}}"
        lines.append(line)
    fast = ops_from_block(("\n".join(lines) + "\n").encode(), 0, edn.op_from_edn)
    slow, problems = _general(lines)
    assert problems == []
    if fast is not None:
        assert fast == slow
        assert [repr(o.value) for o in fast] == [repr(o.value) for o in slow]
        assert [repr(o.error) for o in fast] == [repr(o.error) for o in slow]


# The shaped rewrite (one replace per key, the keys' order read off a block's first line):
# lines with no strings and keywords only where Jepsen puts them, keys in Jepsen's order or any
# other, odd values now and then. Wherever the fast path answers it must agree with the general
# reader; when every line has the first line's order and plain values it must answer, and by the
# shaped rewrite, not the long way.
JEPSEN_ORDER = (":type", ":f", ":value", ":time", ":process", ":index")
# Jepsen's transactions too: vectors of micro-ops, each opened by a keyword.
shaped_values = st.sampled_from(
    [
        "nil",
        "0",
        "-7",
        "1.5",
        "true",
        "false",
        "[1 2]",
        "[3 [4 nil]]",
        "[nil nil]",
        "[]",
        "[[:append 5 3] [:r 5 [1 2 3]]]",
        "[[:r 1 nil]]",
        "[[:r 2 []] [:append 2 7] [:w 4 -1]]",
        "[:r 5 nil]",
        "[[:append 0 1] [:r 0 [1]] [:r 0 nil]]",
        "[[:rd]]",
    ]
)
odd_shaped_values = st.sampled_from(
    [
        ":kw",
        "[1 :x]",
        "[:a 1]",
        "+1",
        "1.",
        "x",
        "[1,2]",
        "1M",
        "(5 6)",
        "[[:r, 1 nil]]",
        "[[:r 1] :x]",
        "[[:a: 1]]",
        "[[:a::b 1]]",
        "[[:a/ 1]]",
        "[[:r[1]]]",
        "[[:r{1]]",
        "[:ok :ok]",
        "[[:append 5 :r]]",
        "[[:1a 2]]",
        "[[:append]]",
    ]
)
shaped_fs = st.sampled_from([":read", ":cas", ":write", ":nil", ":f", ":a.b/c", ":type"])
odd_shaped_fs = st.sampled_from(["7", "nil", ":a,", "[1]", "true"])


@st.composite
def shaped_lines(draw: st.DrawFn, plain: bool) -> list[str]:
    lines = []
    for i in range(draw(st.integers(1, 6))):
        entries = {
            ":type": draw(st.sampled_from([":invoke", ":ok", ":fail", ":info"])),
            ":f": draw(shaped_fs if plain else shaped_fs | odd_shaped_fs),
            ":value": draw(shaped_values if plain else shaped_values | odd_shaped_values),
            ":time": str(draw(st.integers(0, 2**53 - 1))),
            ":process": draw(st.sampled_from(["0", "7", ":nemesis"])),
            ":index": str(i),
        }
        keys = list(JEPSEN_ORDER)
        if draw(st.booleans()):
            entries[":error"] = draw(st.sampled_from([":timeout", "nil", ":net/down"]))
            keys.append(":error")
        if not plain:
            keys = draw(st.permutations(keys))
            if draw(st.integers(0, 5)) == 0:
                keys.remove(draw(st.sampled_from(keys)))
        lines.append("{" + ", ".join(f"{k} {entries[k]}" for k in keys) + "}")
    return lines


@FUZZ
@given(shaped_lines(plain=False))
def test_edn_shaped_rewrite_never_misreads_a_line(lines: list[str]) -> None:
    from chaos.histories import edn_fast

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(edn_fast, "_scan", None)  # the pure-Python rewrite (test_edn_scan: the other)
        fast = edn_fast.ops_from_block(("\n".join(lines) + "\n").encode(), 0, edn.op_from_edn)
    slow, problems = _general(lines)
    if fast is not None:
        assert problems == []
        assert fast == slow
        assert [repr(o.value) for o in fast] == [repr(o.value) for o in slow]


@FUZZ
@given(shaped_lines(plain=True))
def test_edn_shaped_rewrite_takes_jepsen_lines(lines: list[str]) -> None:
    from chaos.histories import edn_fast

    def no_long_way(*_: Any) -> None:
        raise AssertionError("the shaped rewrite declined a block of Jepsen lines")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(edn_fast, "_rewrite_long", no_long_way)
        mp.setattr(edn_fast, "_scan", None)  # the pure-Python rewrite (test_edn_scan: the other)
        fast = edn_fast.ops_from_block(("\n".join(lines) + "\n").encode(), 0, edn.op_from_edn)
    slow, problems = _general(lines)
    assert problems == [] and fast == slow
    # a transaction's micro-op names stay keywords, as the general reader makes them
    assert [repr(o.value) for o in fast] == [repr(o.value) for o in slow]


def test_edn_shaped_rewrite_on_lines_out_of_the_first_ones_order() -> None:
    from chaos.histories import edn_fast

    first = "{:type :ok, :f :read, :value 1, :time 5, :process 0, :index 0}"
    swapped = [
        # only numbers moved: still read the shaped way, and right
        "{:type :ok, :f :read, :value 2, :index 1, :process 3, :time 6}",
        # :f and :type swapped, :f before :value moved: not JSON after the rewrite, so the long
        # way reads them (and right)
        "{:f :write, :type :ok, :value 3, :time 7, :process 0, :index 2}",
        "{:type :ok, :value 4, :f :write, :time 8, :process 0, :index 3}",
        "{:type :ok, :f :cas, :time 9, :value [1 2], :process 0, :index 4}",
    ]
    for line in swapped:
        block = (first + "\n" + line + "\n").encode()
        checked = edn_fast._prechecked(block)
        assert checked is not None
        shaped = edn_fast._rewrite_shaped(checked[0])
        assert shaped is not None
        got = edn_fast.ops_from_block(block, 0, edn.op_from_edn)
        assert got == _general([first, line])[0]
        decodes = True
        try:
            edn_fast._OP_LINES.decode_lines(shaped[0])
        except Exception:
            decodes = False
        assert decodes == (line is swapped[0]), line


def test_edn_text_keeps_what_str_holds() -> None:
    # Text given as str is not bytes from a file: a lone surrogate in it is kept, not reported.
    text = '{:type :ok, :f :read, :value "a\ud800b", :process 0, :index 0}\n'
    ops, problems = edn.read_history_text(text)
    assert problems == [] and ops[0].value == "a\ud800b"


def test_edn_fast_path_refuses_keywords_the_general_reader_refuses() -> None:
    # ":a::b", ":a:" and ":a/" match the fast path's keyword pattern but are not EDN keywords:
    # the line is an error naming it, whichever place of the op map holds the keyword.
    good = "{:type :ok, :f :txn, :value [[:append 1 2] [:r 1 [2]]], :time 1, :process 0, :index 0}"
    bad = [
        "{:type :ok, :f :a::b, :value 1, :time 1, :process 0, :index 1}",
        "{:type :ok, :f :txn, :value 1, :time 1, :process :p:, :index 1}",
        "{:type :ok, :f :txn, :value [[:append: 1 2]], :time 1, :process 0, :index 1}",
        "{:type :ok, :f :txn, :value [1 :a/], :time 1, :process 0, :index 1}",
        "{:type :ok, :f :txn, :value 1, :time 1, :process 0, :index 1, :error :e::x}",
        '{:type :ok, :f :txn, :value "s", :time 1, :process 0, :index 1, :k:: 1}',
    ]
    for line in bad:
        ops, problems = edn.read_history_text(f"{good}\n{line}\n{good}\n")
        assert [o.index for o in ops] == [0, 0], line
        assert [(p.line, p.message[:22]) for p in problems] == [(2, "not EDN (invalid keywo")]
    ops, problems = edn.read_history_text(good + "\n")
    assert problems == [] and ops[0].value == [["append", 1, 2], ["r", 1, [2]]]
    assert all(type(m[0]) is edn.Keyword for m in ops[0].value)
