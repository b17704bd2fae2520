"""The EDN reader against the grammar, as a Clojure reader reads it, and histories in every shape.

Each corpus entry is EDN text with the value ``clojure.edn/read-string`` gives, written by hand as
the Python value chaos promises for it (chaos.histories.edn_types); values are compared with
their types (:func:`exact`), so a keyword cannot pass for a string, a list for a vector, a symbol
for a string. Then whole histories: the fast path is proven equal to the general reader over
generated histories in many shapes and block sizes.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.histories import edn
from chaos.histories.edn import (
    Char,
    EdnError,
    EdnList,
    FrozenMap,
    Keyword,
    Symbol,
    Tagged,
    loads,
    read_edn_forms,
)
from chaos.histories.ops import NEMESIS, Op, OpType
from tests.fuzz import examples

K, S = Keyword, Symbol


def exact(v: Any) -> Any:
    """``v`` as a hashable tree that keeps every EDN type apart (Python's == does not)."""
    if v is None or isinstance(v, bool):
        return ("bool-or-nil", v)
    if isinstance(v, Tagged):
        return ("tagged", v.tag, exact(v.value))
    for t in (Keyword, Symbol, Char):
        if isinstance(v, t):
            return (t.__name__, str.__str__(v))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", repr(v))
    if isinstance(v, Decimal):
        return ("decimal", str(v))
    if isinstance(v, Fraction):
        return ("ratio", v.numerator, v.denominator)
    if isinstance(v, EdnList):
        return ("list", tuple(map(exact, v)))
    if isinstance(v, list):
        return ("vector", tuple(map(exact, v)))
    if isinstance(v, tuple):
        return ("tuple", tuple(map(exact, v)))
    if isinstance(v, FrozenMap):
        return ("frozen-map", frozenset((exact(k), exact(x)) for k, x in v.items()))
    if isinstance(v, dict):
        return ("map", frozenset((exact(k), exact(x)) for k, x in v.items()))
    if isinstance(v, frozenset):
        return ("set", frozenset(map(exact, v)))
    raise AssertionError(f"not an EDN value: {v!r}")


# (EDN text, what Clojure reads) — hand-written, one shape each.
CORPUS: list[tuple[str, Any]] = [
    # nil, booleans
    ("nil", None),
    ("true", True),
    ("false", False),
    # integers: decimal, sign, N, hex, octal, radix
    ("42", 42),
    ("-7", -7),
    ("+3", 3),
    ("0", 0),
    ("42N", 42),
    ("123456789012345678901234567890N", 123456789012345678901234567890),
    ("0x1F", 31),
    ("-0xff", -255),
    ("017", 15),
    ("2r101", 5),
    ("36rZ", 35),
    # floats, BigDecimal, ratios, symbolic values
    ("1.5", 1.5),
    ("1e3", 1000.0),
    ("-2.5E-1", -0.25),
    ("1.", 1.0),
    ("1.5M", Decimal("1.5")),
    ("7M", Decimal("7")),
    ("1/2", Fraction(1, 2)),
    ("-3/6", Fraction(-1, 2)),
    ("4/2", 2),
    ("##Inf", math.inf),
    ("##-Inf", -math.inf),
    # strings and their escapes (octal too)
    ('""', ""),
    ('"a\\tb\\n\\"q\\" \\\\ \\u00e9 \\101 \\b\\f\\r"', 'a\tb\n"q" \\ é A \b\f\r'),
    ('"line one\nline two"', "line one\nline two"),
    ('"\\ud83d\\ude00"', "\U0001f600"),
    # characters
    ("\\a", Char("a")),
    ("\\newline", Char("\n")),
    ("\\space", Char(" ")),
    ("\\tab", Char("\t")),
    ("\\return", Char("\r")),
    ("\\formfeed", Char("\f")),
    ("\\backspace", Char("\b")),
    ("\\u0041", Char("A")),
    ("\\o101", Char("A")),
    ("\\(", Char("(")),
    ("\\\\", Char("\\")),
    # keywords and symbols
    (":a", K("a")),
    (":ns/a", K("ns/a")),
    (":a.b/c-d?", K("a.b/c-d?")),
    (":1", K("1")),
    ("foo", S("foo")),
    ("ns/foo", S("ns/foo")),
    ("/", S("/")),
    ("+", S("+")),
    ("-", S("-")),
    ("-a", S("-a")),
    ("a.b", S("a.b")),
    ("<=>", S("<=>")),
    ("foo'", S("foo'")),
    ("a#b", S("a#b")),
    # collections, over any lines, commas as whitespace
    ("[]", []),
    ("()", EdnList([])),
    ("{}", {}),
    ("#{}", frozenset()),
    ("[1 (2 3) #{4} {:a 5}]", [1, EdnList([2, 3]), frozenset({4}), {K("a"): 5}]),
    ("[1,2,,3]", [1, 2, 3]),
    ("(\n  1\n  [2\n   3]\n)", EdnList([1, [2, 3]])),
    ("{:a\n 1,\n :b {:c\n     [nil]}}", {K("a"): 1, K("b"): {K("c"): [None]}}),
    ('{"a" 1, a 2, \\a 3}', {"a": 1, S("a"): 2, Char("a"): 3}),
    (
        "{[1 2] :x, {:a 1} #{:y}, (3) #{[4]}}",
        {
            (1, 2): K("x"),
            FrozenMap({K("a"): 1}): frozenset({K("y")}),
            (3,): frozenset({(4,)}),
        },
    ),
    ("#{[1 2] {:a [3]}}", frozenset({(1, 2), FrozenMap({K("a"): (3,)})})),
    # comments and discards
    ("; a comment\n[1 ; another\n 2]", [1, 2]),
    ("[1 ; end\n]", [1]),  # a comment's tail is never read as a token
    ("x ; y", S("x")),
    ("[1 #_ 2 3]", [1, 3]),
    ("[1 #_ #_ 2 3 4]", [1, 4]),
    ("[#_ {:a [1 2]} 5]", [5]),
    ("#_ x y", S("y")),
    ("[1 #_\n\n 2]", [1]),
    # tagged literals and records
    (
        '#inst "2020-01-01T00:00:00.000-00:00"',
        Tagged("", "inst", "2020-01-01T00:00:00.000-00:00"),
    ),
    (
        '#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"',
        Tagged("", "uuid", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"),
    ),
    (
        "#jepsen.history.Op{:type :ok, :f :read}",
        Tagged("", "jepsen.history.Op", {K("type"): K("ok"), K("f"): K("read")}),
    ),
    ("#my/tag [1 #_ 2]", Tagged("", "my/tag", [1])),
    ("#a #b 1", Tagged("", "a", Tagged("", "b", 1))),
    ("#a #_ 1 2", Tagged("", "a", 2)),
    # metadata is read and dropped (it never changes a value's equality)
    ("^:private [1]", [1]),
    ("^{:a 1} sym", S("sym")),
    ('^"T" (1)', EdnList([1])),
]

# Text Clojure refuses (or, marked, that Python cannot hold), and a word of the reason.
REFUSED: list[tuple[str, str]] = [
    ("08", "invalid number"),
    ("1a", "invalid number"),
    ("1.5.2", "invalid number"),
    ("37r1", "radix"),
    ("1/0", "divides by zero"),
    (":", "invalid keyword"),
    ("::a", "invalid keyword"),
    (":a:", "invalid keyword"),
    ("a:", "invalid symbol"),
    ("a/", "invalid symbol"),
    ("{:a}", "odd number"),
    ("{:a 1 :a 2}", "repeats the key"),
    ("#{1 1}", "repeats the member"),
    ('"\\q"', "unknown string escape"),
    ('"\\u12"', "4 hex digits"),
    ("\\foo", "unsupported character"),
    ("\\ud800", "invalid character"),
    ("(]", "closed by"),
    ("]", "unmatched"),
    ("#:ns{:a 1}", "namespaced map"),
    ("#1 x", "invalid tag"),
    ("##Foo", "unknown symbolic value"),
    ('"abc', "unterminated string"),
    ("[1 2", "ends inside"),
    ("{1 :a 1.0 :b}", "equal in Python"),
    ('{:a 1 "a" 2}', "equal in Python"),
    ("^1 [2]", "metadata must be"),
    ("^:a 1", "metadata can only"),
]


@pytest.mark.parametrize("text,want", CORPUS, ids=[t for t, _ in CORPUS])
def test_reads_as_clojure_does(text: str, want: Any) -> None:
    got = loads(text)
    assert exact(got) == exact(want)
    if isinstance(got, Tagged):
        assert str.__str__(got) == text.strip()  # the source text, written back unchanged


def test_nan_is_nan() -> None:
    assert math.isnan(loads("##NaN"))


@pytest.mark.parametrize("text,why", REFUSED, ids=[t for t, _ in REFUSED])
def test_refuses_what_clojure_refuses(text: str, why: str) -> None:
    with pytest.raises(EdnError, match=why):
        loads(text)


def test_symbols_chars_and_strings_stay_apart_keywords_stay_strings() -> None:
    assert S("a") != "a" and Char("a") != "a" and S("a") != Char("a") and S("a") != K("a")
    assert len({S("a"), Char("a"), "a"}) == 3
    assert K("a") == "a"  # what every op field comparison in chaos relies on
    assert EdnList([1, 2]) == [1, 2]  # (= '(1 2) [1 2]) in Clojure
    with pytest.raises(TypeError):
        FrozenMap({1: 2})[3] = 4  # type: ignore[index]


@pytest.mark.parametrize("text,want", CORPUS, ids=[t for t, _ in CORPUS])
def test_writes_back_what_it_reads(text: str, want: Any) -> None:
    v = loads(text)
    assert exact(loads(edn.dumps(v))) == exact(v)


def test_read_edn_forms_top_level_forms_text_and_file(tmp_path: Path) -> None:
    text = "; head\n{:a 1}\n[1 2] #_ skipped\n(3)\n:k sym\n"
    want = [{K("a"): 1}, [1, 2], EdnList([3]), K("k"), S("sym")]
    assert [exact(v) for v in read_edn_forms(text)] == [exact(v) for v in want]
    path = tmp_path / "forms.edn"
    path.write_text(text)
    assert [exact(v) for v in read_edn_forms(path)] == [exact(v) for v in want]
    path.write_text("[1\n 2]\n{:a\n")
    forms = read_edn_forms(path)
    assert next(forms) == [1, 2]
    with pytest.raises(EdnError) as e:
        next(forms)
    assert e.value.line == 3 and e.value.incomplete
    path.write_bytes(b"[1]\n[\xff]\n")
    with pytest.raises(EdnError, match="not UTF-8 at line 2"):
        list(read_edn_forms(path))


# ---------------------------------------------------------------- histories in every shape

FUZZ = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

edn_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from([K("a"), K("ns/b"), S("sym"), Char("x"), Char("\n"), Fraction(1, 3)])
    | st.decimals(allow_nan=False, allow_infinity=False, places=2)
)
edn_values = st.recursive(
    edn_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(EdnList),
    max_leaves=6,
)


@st.composite
def histories(draw: st.DrawFn) -> list[Op]:
    out = []
    for i in range(draw(st.integers(0, 10))):
        out.append(
            Op(
                index=i,
                time=draw(st.integers(0, 10**9)) / 1e9,
                process=draw(st.integers(0, 9) | st.just(NEMESIS)),
                type=draw(st.sampled_from(list(OpType))),
                f=draw(st.sampled_from(["read", "write", "cas", "start"])),
                value=draw(st.integers(0, 5) | st.none() | edn_values),
                error=draw(st.none() | st.just("timeout")),
            )
        )
    return out


def _pretty(line: str) -> str:
    """An op map spread over lines, the way pprint writes it."""
    return line.replace(", :", ",\n :")


SHAPES = ["lines", "vector", "jepsen-vector", "list", "commented", "pretty", "records", "mixed"]


def render(history: list[Op], shape: str, crlf: bool) -> str:
    lines = [edn.op_to_edn(op) for op in history]
    if shape == "lines":
        text = "\n".join(lines)
    elif shape == "vector":
        text = "[\n" + "\n".join(lines) + "\n]"
    elif shape == "jepsen-vector":
        text = "[" + "\n ".join(lines) + "]"
    elif shape == "list":
        text = "(" + "\n".join(lines) + ")"
    elif shape == "commented":
        body = "\n".join(f"{line} ; op {i}" if i % 2 else line for i, line in enumerate(lines))
        text = ";; a Jepsen history\n; more\n\n[" + body + "\n] ; the end\n;; really"
    elif shape == "pretty":
        text = "[" + "\n ".join(_pretty(line) for line in lines) + "]"
    elif shape == "records":
        text = "\n".join("#jepsen.history.Op" + line for line in lines)
    else:  # several per line, commas, a discarded op, blank lines
        text = "#_ {:type :ok}\n" + "\n\n".join(
            " , ".join(lines[i : i + 2]) for i in range(0, len(lines), 2)
        )
    text += "\n"
    return text.replace("\n", "\r\n") if crlf else text


@FUZZ
@given(histories(), st.sampled_from(SHAPES), st.sampled_from([64, 300, 1 << 20]), st.booleans())
def test_fast_path_reads_every_shape_as_the_general_reader(
    history: list[Op], shape: str, block: int, crlf: bool
) -> None:
    text = render(history, shape, crlf)
    saved = edn._BLOCK
    edn._BLOCK = block  # small blocks: forms and lines cut at every place
    try:
        fast = edn.read_history_text_lines(text)
        slow = edn.read_history_text_lines(text, fast=False)
    finally:
        edn._BLOCK = saved
    assert fast.problems == [] and slow.problems == [], (fast.problems, slow.problems)
    assert [exact(o.value) for o in fast.ops] == [exact(o.value) for o in slow.ops]
    assert fast.ops == slow.ops
    assert list(fast.lines) == list(slow.lines)
    # and both are the history written, with its values' types
    assert [(o.index, o.process, o.type, o.f, o.error) for o in fast.ops] == [
        (o.index, o.process, o.type, o.f, o.error) for o in history
    ]
    assert [exact(o.value) for o in fast.ops] == [exact(o.value) for o in history]


def test_the_fast_path_does_take_jepsen_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above would hold with no fast path at all: show it answers."""
    taken: list[int] = []
    real = edn.ops_from_block

    def spy(block: bytes, position: int, op_from_edn: Any) -> Any:
        got = real(block, position, op_from_edn)
        taken.append(0 if got is None else len(got))
        return got

    monkeypatch.setattr(edn, "ops_from_block", spy)
    line = "{{:type :{t}, :f :read, :value {v}, :time {i}, :process 0, :index {i}}}"
    lines = [line.format(t="invoke" if i % 2 == 0 else "ok", v="nil", i=i) for i in range(10)]
    text = ";; Jepsen\n[" + "\n ".join(lines) + "]\n; end\n"
    h = edn.read_history_text_lines(text)
    assert h.problems == [] and len(h.ops) == 10 and sum(taken) == 10
    assert list(h.lines) == list(range(2, 12))


def test_lines_and_problems_name_the_line() -> None:
    text = (
        "; header\n[\n"
        "{:type :invoke, :f :read, :value nil, :process 0}\n"
        "{:type :ok,\n :f :read,\n :value 08, :process 0}\n"  # lines 4-6: 08 is not a number
        "{:type :invoke, :f :read, :value nil, :process 1}\n"
        "]\n"
    )
    h = edn.read_history_text_lines(text)
    assert [(p.line, "invalid number" in p.message) for p in h.problems] == [(4, True)]
    assert "at line 6" in h.problems[0].message
    assert list(h.lines) == [3, 7]
    # text after the history's closing bracket, and a vector never closed
    _, problems = edn.read_history_text("[{:type :ok, :f :r, :process 0}]\n{:x 1}\n")
    assert [p.line for p in problems] == [2] and "after the history" in problems[0].message
    _, problems = edn.read_history_text("[{:type :ok, :f :r, :process 0}\n")
    assert [p.line for p in problems] == [1] and "not closed" in problems[0].message


def test_hostile_shapes_read_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A history on one line (Clojure's pr-str) longer than many chunks, and a block of
    broken lines each named: both once quadratic (re-copying, counting lines from the start)."""
    import time

    monkeypatch.setattr(edn, "_BLOCK", 4096)
    op = "{:type :invoke, :f :read, :value nil, :process %d, :index %d}"
    n = 20_000
    one_line = "[" + " ".join(op % (i % 5, i) for i in range(n)) + "]"
    t0 = time.perf_counter()
    h = edn.read_history_text_lines(one_line)
    assert len(h.ops) == n and h.problems == [] and h.lines[n - 1] == 1
    broken = "{:type :ok :f}\n" * n
    _, problems = edn.read_history_text(broken)
    assert [p.line for p in problems] == list(range(1, n + 1))
    # linear: ~0.3 s idle; quadratic was minutes at this size
    assert time.perf_counter() - t0 < 30
