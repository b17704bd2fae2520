"""The compiled pass over Jepsen's op lines (chaos/histories/_edn_scan.pyx): it must read what
the pure-Python fast path and the general reader read, give up on anything outside its grammar,
and its absence (an unbuilt checkout) must change nothing but speed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaos.histories import edn, edn_fast
from chaos.histories.ops import NEMESIS, Op
from tests.unit.test_history_readers import (
    FUZZ,
    edn_op_line,
    jepsen_values,
    kw_names,
    shaped_lines,
)

ROOT = Path(__file__).resolve().parents[2]

built = pytest.mark.skipif(
    edn_fast._scan is None, reason="the compiled pass is not built (scripts/build-native)"
)


def _both(block: bytes) -> tuple[list[Op] | None, list[Op] | None]:
    """``ops_from_block`` with the compiled pass, and without it (the pure-Python path)."""
    compiled = edn_fast.ops_from_block(block, 0, edn.op_from_edn)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(edn_fast, "_scan", None)
        pure = edn_fast.ops_from_block(block, 0, edn.op_from_edn)
    return compiled, pure


def _same(a: list[Op] | None, b: list[Op] | None) -> None:
    assert a == b
    if a is not None and b is not None:  # and the same types: a keyword stays a keyword
        assert [repr(o.value) for o in a] == [repr(o.value) for o in b]
        assert [repr(o.error) for o in a] == [repr(o.error) for o in b]
        assert [type(o.time) for o in a] == [type(o.time) for o in b]


def _general(block: bytes) -> list[Op]:
    ops, problems = edn.read_history_text(block.decode(), "t", fast=False)
    assert problems == []
    return ops


written_rows = st.lists(
    st.tuples(
        st.sampled_from(["invoke", "ok", "fail", "info"]),
        kw_names,
        st.integers(0, 30) | st.just(NEMESIS),
        jepsen_values,
        st.none() | kw_names.map(edn.Keyword),
        st.integers(0, 2**50),
    ),
    min_size=1,
    max_size=5,
)


def _written(rows: list[tuple[Any, ...]]) -> bytes:
    lines = []
    for i, (typ, f, p, v, err, t) in enumerate(rows):
        proc = ":nemesis" if p == NEMESIS else str(p)
        line = f"{{:type :{typ}, :f :{f}, :value {edn.dumps(v)}, :time {t}, "
        line += f":process {proc}, :index {i}"
        line += "}" if err is None else f", :error {edn.dumps(err)}}}"
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


@built
@FUZZ
@given(
    shaped_lines(plain=False).map(lambda ls: ("\n".join(ls) + "\n").encode())
    | shaped_lines(plain=True).map(lambda ls: ("\n".join(ls) + "\n").encode())
    | st.lists(edn_op_line(), min_size=1, max_size=6).map(
        lambda ls: ("\n".join(ls) + "\n").encode()
    )
    | written_rows.map(_written)
)
def test_compiled_and_pure_paths_read_the_same(block: bytes) -> None:
    compiled, pure = _both(block)
    _same(compiled, pure)
    assert edn_fast._scan is not None
    scanned = edn_fast._scan(block)
    if scanned is not None:
        ops = edn_fast._finished(*scanned)
        if ops is not None:  # what the compiled pass answers, the general reader reads
            _same(ops, _general(block))


@built
@FUZZ
@given(shaped_lines(plain=True))
def test_compiled_pass_takes_jepsen_lines(lines: list[str]) -> None:
    # the common shape must not give up (else the pass buys nothing); floats are outside it
    block = ("\n".join(lines) + "\n").encode()
    assert edn_fast._scan is not None
    scanned = edn_fast._scan(block)
    if b"1.5" in block:
        assert scanned is None
        return
    assert scanned is not None and scanned[1] == len(lines)
    ops = edn_fast._finished(*scanned)
    assert ops is not None
    _same(ops, _general(block))


@built
def test_compiled_pass_gives_up_outside_its_grammar() -> None:
    assert edn_fast._scan is not None
    good = "{:type :ok, :f :cas, :value [3 [1 2]], :time 1000, :process 5, :index 0}"
    assert edn_fast._scan((good + "\n").encode()) is not None
    odd = [
        good.replace("[3 [1 2]]", '"s"'),  # a string
        good.replace("[3 [1 2]]", "1.5"),  # a float
        good.replace("[3 [1 2]]", "[3,2]"),  # a comma inside a vector
        good.replace("[3 [1 2]]", ":kw"),  # a keyword value
        good.replace("[3 [1 2]]", "#{1}"),  # a set
        good.replace("[3 [1 2]]", "(1 2)"),  # a list
        good.replace("[3 [1 2]]", "42N"),
        good.replace("[3 [1 2]]", "1234567890123456789"),  # 19 digits
        good.replace("[3 [1 2]]", "[1  2]"),
        good.replace(", :index 0", ""),  # no :index: the general reader gives its position
        good.replace(", :time 1000", ""),
        good.replace(":index 0", ":index 0, :index 1"),  # a repeated key
        good.replace(":index 0", ":index 0, :node 1"),  # another key
        good.replace(", :f", ",  :f"),
        good.replace(", :f", " :f"),
        good.replace(", :f", "\t:f"),
        good.replace(":f :cas", ':f "cas"'),
        good.replace(":process 5", ':process "p"'),
        good.replace(":time 1000", ":time 1e3"),
        good.replace("}", "} ; a comment"),
        good.replace(":cas", ":cäs"),
        good + " ",
    ]
    for line in odd:
        assert edn_fast._scan((line + "\n").encode()) is None, line
    assert edn_fast._scan(good.encode()) is None  # a line must end in its newline
    # the block gives up as a whole: the pure path reads it
    block = (good + "\n" + odd[0] + "\n").encode()
    assert edn_fast._scan(block) is None
    compiled, pure = _both(block)
    assert compiled is not None and compiled == pure == _general(block)


@built
def test_compiled_pass_leaves_names_to_the_general_readers_rule() -> None:
    # names the pass copies but the general reader refuses: the block is not taken from it
    good = "{:type :ok, :f :txn, :value [[:append 1 2]], :time 1, :process 0, :index 0}"
    for bad in [
        good.replace(":f :txn", ":f :a::b"),
        good.replace(":process 0", ":process :p:"),
        good.replace("[[:append", "[[:append:"),
        good.replace(":index 0}", ":index 0, :error :e::x}"),
    ]:
        block = (bad + "\n").encode()
        assert edn_fast._scan is not None
        scanned = edn_fast._scan(block)
        assert scanned is not None and edn_fast._finished(*scanned) is None, bad
        assert edn_fast.ops_from_block(block, 0, edn.op_from_edn) is None, bad


def test_an_unbuilt_checkout_reads_the_same_way(tmp_path: Path) -> None:
    # the compiled module made unimportable, as in a checkout that never ran build-native
    lines = [
        f"{{:type :ok, :f :txn, :value [[:append {i} {i}] [:r {i} [1 2]]], :time {i}, "
        f":process {i % 3}, :index {i}}}"
        for i in range(50)
    ]
    path = tmp_path / "history.edn"
    path.write_text("[" + "\n".join(lines) + "]\n")
    script = (
        "import sys; sys.modules['chaos.histories._edn_scan'] = None\n"
        "from pathlib import Path\n"
        "from chaos.histories import edn, edn_fast\n"
        "assert edn_fast._scan is None\n"
        f"ops, problems = edn.read_history(Path({str(path)!r}))\n"
        "print(len(ops), len(problems), repr(ops[7].value))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    ops, problems = edn.read_history(path)
    assert out.split(maxsplit=2) == ["50", "0", repr(ops[7].value) + "\n"]
    assert problems == [] and type(ops[7].value[0][0]) is edn.Keyword


def test_a_stale_build_of_another_grammar_is_not_used() -> None:
    script = (
        "import sys, types\n"
        "stale = types.ModuleType('chaos.histories._edn_scan')\n"
        "stale.GRAMMAR = 0\n"
        "stale.jepsen_lines_to_json = lambda block: (b'', 0, False)\n"
        "sys.modules[stale.__name__] = stale\n"
        "from chaos.histories import edn_fast\n"
        "print(edn_fast._scan is None)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out == "True\n"
    # and this build says the grammar edn_fast expects (else the tests above would skip)
    if edn_fast._scan is not None:
        assert edn_fast._edn_scan.GRAMMAR == edn_fast._SCAN_GRAMMAR


def _tagged(block: bytes) -> bytes:
    return b"".join(b"#jepsen.history.Op" + line for line in block.splitlines(keepends=True))


@FUZZ
@given(written_rows.map(_written))
def test_jepsen_op_records_read_as_their_maps(block: bytes) -> None:
    # Jepsen 0.3 writes each op as a #jepsen.history.Op{...} record: both fast paths take it,
    # and read what the general reader reads of it and of the bare maps
    tagged = _tagged(block)
    compiled, pure = _both(tagged)
    _same(compiled, pure)
    assert pure is not None
    _same(pure, _general(tagged))
    _same(pure, _general(block))


def test_only_a_line_opening_op_record_is_taken_as_a_map() -> None:
    good = b"{:type :ok, :f :txn, :value [[:append 1 2]], :time 1, :process 0, :index 0}\n"
    in_string = good.replace(b"}\n", b', :note "x #jepsen.history.Op{"}\n')
    ops = edn_fast.ops_from_block(_tagged(in_string), 0, edn.op_from_edn)
    assert ops == _general(_tagged(in_string))
    assert ops is not None and ops[0].extra["note"] == "x #jepsen.history.Op{"
    for odd in (b"#jepsen.history.Other" + good, b"#jepsen.history.Op " + good):
        assert edn_fast.ops_from_block(odd, 0, edn.op_from_edn) is None, odd


@built
def test_keywords_anywhere_in_a_vector_take_the_compiled_pass() -> None:
    # Elle's histories key by keyword ([:append :x 1]); every string decoded from such a block
    # is a keyword again, heads and the rest
    good = "{:type :ok, :f :txn, :value [[:append :x 1] [:r :y [1 :z]]], :time 1, :process 0, :index 0}"
    block = (good + "\n").encode()
    assert edn_fast._scan is not None
    scanned = edn_fast._scan(block)
    assert scanned is not None and scanned[2] == 2
    ops = edn_fast._finished(*scanned)
    assert ops is not None
    _same(ops, _general(block))
    assert [type(x) for x in ops[0].value[1][2]] == [int, edn.Keyword]
    compiled, pure = _both(block)
    _same(compiled, pure)
    bad = good.replace(":x", ":x::y")  # a name the general reader refuses: not from here
    assert edn_fast.ops_from_block((bad + "\n").encode(), 0, edn.op_from_edn) is None
