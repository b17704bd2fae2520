"""Reading Jepsen's usual op lines at JSON speed: a block of EDN lines rewritten as JSON lines.

Jepsen writes ``history.edn`` one op map per line, and nearly every line has one shape::

    {:type :ok, :f :cas, :value [12 [3 4]], :time 7124512, :process 5, :index 10}

flat maps with keyword keys, ``, `` between entries, values that are keywords, integers, floats,
strings, nil, booleans and vectors of those (``[k v]`` tuples, ``[expected new]``). A block of
such lines is turned into JSON lines with a handful of whole-block passes (``bytes.replace`` and
regexes that start with a literal, both of which run in C) and decoded by msgspec, straight into
:class:`~chaos.histories.ops.Op` records when only Jepsen's seven keys appear. The per-line EDN
reader costs several microseconds of Python per token; these passes cost nanoseconds per byte.

The rewrite is exact or it gives up: :func:`ops_from_block` returns ``None`` for any block it is
not sure of (tags other than Jepsen 0.3's op record at the start of a line, sets, lists, nested maps, characters, comments, symbols, ``42N``, odd spacing, a
string escape JSON and EDN read differently, ...), and the caller reads that block with the
general reader, which also gives each bad line its number. The tests check that both readers
give the same ops wherever this one answers.

Most blocks take a shorter way (:func:`_rewrite_shaped`): the keys' order is read off the
block's first line, and one replace per key turns every line's ``, :key `` into ``,"key":`` —
with the opening and closing quotes of the keyword values of ``:type`` and ``:f`` folded into
those same replaces, so that a block costs about ten passes instead of thirty. A line whose keys
come in another order still reads right when only its numeric fields moved, and otherwise is not
JSON (a quote lands where JSON wants a comma), so the block goes the long way: see the function.
Jepsen's transactions (``:value [[:append 5 3] [:r 5 [1 2 3]]]``) take the shorter way too: a
keyword that opens a vector is quoted by one replace per distinct name (:func:`_quote_heads`)
and turned back into a keyword after decoding; any other keyword in a value sends the block the
long way.

Strings and keywords stay apart: string bodies are cut out before the rewrite and put back
prefixed with U+0001, keywords in values become strings prefixed with U+0002, and a block that
has either is built op by op from decoded maps, turning the prefixed strings back into ``str``
and :class:`~chaos.histories.edn.Keyword`. Keywords as values of ``:type``, ``:f``,
``:process`` and ``:error`` become plain strings, as the general reader makes them. Every
keyword name read is checked with the general reader's rule (``:a::b``, ``:a:`` and ``:a/`` are
not keywords there; the fast path's pattern matches them), and a block holding one it refuses
goes to the general reader, which names the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from operator import attrgetter
from typing import Any

import msgspec

from chaos.histories.edn_reader import is_keyword_name
from chaos.histories.edn_types import Keyword
from chaos.histories.ops import Op

try:  # the compiled pass, when scripts/build-native has built it (else the replaces below)
    from chaos.histories import _edn_scan
except ImportError:  # pragma: no cover - an unbuilt checkout
    _edn_scan = None  # type: ignore[assignment]

__all__ = ["ops_from_block"]

# What the compiled pass must say it reads: a stale build of another grammar is not used.
_SCAN_GRAMMAR = 2
_scan: Callable[[bytes], tuple[bytes, int, int] | None] | None = (
    _edn_scan.jepsen_lines_to_json
    if _edn_scan is not None and getattr(_edn_scan, "GRAMMAR", None) == _SCAN_GRAMMAR
    else None
)

_KW = rb"[A-Za-z*!_?<>=.][A-Za-z0-9*+!\-_?<>=./:#']*"
# A string on one line: the general reader's string token, minus newlines.
_STR = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_DELIM = rb"(?=[,} \n])"
_TYPES = (b"invoke", b"ok", b"fail", b"info")
# Keyword values of the fields that are names (``:f :cas``) become plain JSON strings, key and
# value in one replace per distinct name (a few per history): far cheaper than a regex
# substitution per line. Longest names first, so that ``:f :cas`` cannot eat ``:f :cas-x``.
_F_NAMES = re.compile(rb":f :(" + _KW + rb")" + _DELIM)
_RARE_NAMED = [
    (
        b":" + k + b" :",
        re.compile(rb":" + k + rb" :(" + _KW + rb")" + _DELIM),
        b'"' + k + rb'":"\1"',
    )
    for k in (b"process", b"error")
]
# Other keyword values (not keys: those follow "{" or ", ") become U+0002-prefixed strings.
_VALUE_KW = re.compile(rb"((?<!,) |\[):(" + _KW + rb")(?=[\] ,}\n])")
_KEY_REPLACE = [
    (sep + b":" + k + b" ", sep[:1] + b'"' + k + b'":')
    for k in (b"index", b"time", b"process", b"value", b"error")
    for sep in (b"{", b", ")
]
# Any other key, when some remain: the block is built from maps, keeping them in ``extra``.
_OTHER_KEY = re.compile(rb"([{,] ?):(" + _KW + rb") ")
_LEADING = re.compile(rb"\n[ ,]+")
_NIL = [
    (b":nil,", b":null,"),
    (b":nil}", b":null}"),
    (b"[nil,", b"[null,"),
    (b",nil,", b",null,"),
    (b",nil,", b",null,"),  # again: adjacent nils share a comma
    (b",nil]", b",null]"),
    (b"[nil]", b"[null]"),
]
_OP_LINES = msgspec.json.Decoder(Op)
_ANY_LINES = msgspec.json.Decoder()
_EXACT = 2.0**53  # integers up to here are exact as floats: ns -> s is then the same rounding


# Keys whose keyword value the shaped rewrite quotes through the separators; ``:process`` and
# ``:error`` keywords (``:nemesis``, ``:timeout``) are rarer and go through _RARE_NAMED first.
_SHAPED_NAMED = (b"type", b"f")
_SHAPED_KEYS = frozenset((b"type", b"f", b"value", b"time", b"process", b"index", b"error"))
_HEAD_KW = re.compile(rb"\[:(" + _KW + rb")(?=[\] ,])")
_FIRST_KEYS = re.compile(rb"(\{|, ):([a-z]+) (:?)")
_F_OF = attrgetter("f")
_PROCESS_OF = attrgetter("process")
_ERROR_OF = attrgetter("error")


@lru_cache(maxsize=1024)
def _name_ok(name: str) -> bool:
    """Whether ``:name`` is a keyword the general reader reads (``_KW`` also matches names it
    refuses: ``a::b``, ``a:``, ``a/``); a name it is not sure of sends the block the long way,
    and from there to the general reader, which names the line."""
    return is_keyword_name(name)


def _keyword(name: str) -> Keyword:
    if not _name_ok(name):
        raise ValueError(f"not a keyword the general reader reads: {name!r}")
    return Keyword(name)


@lru_cache(maxsize=64)
def _shaped_plan(keys: tuple[tuple[bytes, bool], ...]) -> tuple[tuple[bytes, bytes], ...]:
    """The replaces that make JSON of lines with these keys in this order (``named``: the value
    is a keyword, to be quoted). A named value's closing quote is the first byte of the next
    key's replacement, or of ``"}`` when it is the last."""
    plan: list[tuple[bytes, bytes]] = []
    prev_named = False
    for i, (key, named) in enumerate(keys):
        old = (b"{:" if i == 0 else b", :") + key + (b" :" if named else b" ")
        new = b'"' * prev_named + (b'{"' if i == 0 else b',"') + key + b'":' + b'"' * named
        plan.append((old, new))
        prev_named = named
    if prev_named:
        plan.append((b"}\n", b'"}\n'))
    if b"error" not in dict(keys):
        # Jepsen adds :error to the ops that failed or timed out, which the first line
        # seldom is. (A keyword there is already quoted by _RARE_NAMED.)
        plan.append((b", :error ", b',"error":'))
    return tuple(plan)


def _rewrite_shaped(t: bytes) -> tuple[bytes, bool] | None:
    """Lines of Jepsen's seven keys, in the order of the first line, as JSON lines, and whether
    values hold vector-opening keywords (:func:`_quote_heads`); None when the block's first
    line is not of that kind.

    Why a line in another order cannot be misread: every ``"`` in the result comes from a
    replace (the block has no strings), and a named value's string runs to the next ``"``. If
    the key after it is the one the plan expects, that quote closes it; if not, the next quote
    is either a key's own opening quote (``…name,"key":`` — the string closes there and
    ``key":`` follows, which is not JSON) or the closing quote meant for another named value,
    which closes this one just as well, as ``:type``'s and ``:f``'s values are whole keywords.
    So a line that decodes has each key's value exactly as written. Numbers, vectors and nil
    need no quotes, so their keys may come in any order. What the quotes enclose is checked
    after decoding: ``:type`` by its enum, ``:f`` names against the keyword syntax.
    """
    first = t[: t.index(b"\n")]
    found = _FIRST_KEYS.findall(first)
    if not found or found[0][0] != b"{":
        return None
    keys = tuple((k, bool(colon) and k in _SHAPED_NAMED) for _, k, colon in found)
    if any(k not in _SHAPED_KEYS for k, _ in keys) or len({k for k, _ in keys}) != len(keys):
        return None
    if not t.endswith(b"\n"):
        return None
    heads = b"[:" in t
    if heads:
        quoted = _quote_heads(t)
        if quoted is None:
            return None  # keywords elsewhere in vectors: the long way marks them
        t = quoted
    for prefix, rx, rep in _RARE_NAMED:
        if prefix in t:
            t = rx.sub(rep, t)
    for old, new in _shaped_plan(keys):
        t = t.replace(old, new)
    return _nulls(t.replace(b", ", b",").replace(b" ", b",")), heads


def _quote_heads(t: bytes) -> bytes | None:
    """Keywords that open a vector (``[:append 5 3]``, ``[:r 5 nil]``: the micro-ops of
    Jepsen's transactions) as JSON strings, one replace per distinct name; None when a ``[:``
    is left that is not such a keyword.

    Why nothing else can be quoted: the block has no strings (the shaped rewrite's
    precondition), so after decoding, a string inside a value can only be one of these, at
    index 0 of a list; :func:`_keyword_heads` turns them back into keywords. And why a line
    whose keys are out of order still cannot be misread (see :func:`_rewrite_shaped`): if a
    named value's string ran on to the opening quote of one of these, the name's first
    character would follow it, which is not JSON after a string."""
    for name in set(_HEAD_KW.findall(t)):
        if not _name_ok(name.decode()):
            return None
        t = t.replace(b"[:" + name + b" ", b'["' + name + b'" ')
        if b"[:" + name in t:
            t = t.replace(b"[:" + name + b"]", b'["' + name + b'"]')
            t = t.replace(b"[:" + name + b",", b'["' + name + b'",')
    return None if b"[:" in t else t


class _KeywordCache(dict[str, Keyword]):
    """One :class:`Keyword` per name (they are immutable: ops may share them); ValueError for
    a name the general reader does not read as a keyword."""

    def __missing__(self, name: str) -> Keyword:
        kw = self[name] = _keyword(name)
        return kw


def _keyword_heads(v: list[Any], keywords: dict[str, Keyword]) -> None:
    """Turn the quoted vector-opening keywords of a decoded value (see :func:`_quote_heads`)
    back into :class:`Keyword` objects, in place."""
    if v and type(v[0]) is str:
        v[0] = keywords[v[0]]
    for x in v:
        if type(x) is list:
            _keyword_heads(x, keywords)


def _keywords_anywhere(v: list[Any], keywords: dict[str, Keyword]) -> None:
    """:func:`_keyword_heads` for the compiled pass's values with keywords anywhere in their
    vectors: its grammar has no strings, so every string is a quoted keyword."""
    for i, x in enumerate(v):
        if type(x) is str:
            v[i] = keywords[x]
        elif type(x) is list:
            _keywords_anywhere(x, keywords)


def _nulls(t: bytes) -> bytes:
    """EDN's nil as JSON's null, in a block whose separators are already commas."""
    if b"nil" in t:
        # Jepsen's reads: ``:value nil`` and ``[k nil]``. Each pass costs a scan of the block,
        # so the rarer places of a nil are looked at only when one is left.
        t = t.replace(b":nil,", b":null,").replace(b",nil]", b",null]")
        if b"nil" in t:
            for old, new in _NIL:
                t = t.replace(old, new)
    return t


def _names_are_keywords(ops: list[Op]) -> bool:
    """Whether every ``:f``, and every ``:process`` and ``:error`` that is a string, read from
    a block with no strings is a keyword's name the general reader reads, so that nothing but a
    keyword was quoted."""
    names = set(map(_F_OF, ops))
    names.update(map(_PROCESS_OF, ops), map(_ERROR_OF, ops))
    return all(_name_ok(x) for x in names if type(x) is str)


def _prechecked(block: bytes) -> tuple[bytes, list[bytes], int] | None:
    """The block with its strings cut out (each replaced by NUL), the strings, and the op
    count; None for anything the fast path leaves to the general reader."""
    if b"\x00" in block:
        return None
    strings: list[bytes] = _STR.findall(block) if b'"' in block else []
    if strings:
        t = b"\x00".join(_STR.split(block))
        if b'"' in t or b"\\/" in block:  # a string left open; an escape only JSON knows
            return None
    else:
        t = block
    if b"#jepsen.history.Op{" in t:  # Jepsen 0.3's records: each op read as its map
        t = (b"\n" + t).replace(b"\n#jepsen.history.Op{", b"\n{")[1:]
    if b"#" in t or b";" in t or b"\\" in t or b"\t" in t or b"\r" in t or b"null" in t:
        return None  # tags, sets, comments, characters, tabs: the general reader's job
    if b"(" in t or b")" in t:
        return None  # lists: the general reader keeps them apart from vectors (EdnList)
    n = t.count(b"\n") + (not t.endswith(b"\n"))
    if t.count(b"{") != n or t.count(b"}") != n:
        return None  # nested maps, blank lines, or not one map per line
    return t, strings, n


def _rewrite_long(t: bytes, strings: list[bytes], n: int) -> tuple[bytes, bool, int] | None:
    """A prechecked block as JSON lines (times still in nanoseconds), whether it needs building
    from maps, and its op count: any key order, strings, keywords anywhere."""
    for name in _TYPES:
        t = t.replace(b":type :" + name, b'"type":"' + name + b'"')
    if b":type :" in t:
        return None
    if b":f :" in t:
        for name in sorted(set(_F_NAMES.findall(t)), key=len, reverse=True):
            if not _name_ok(name.decode()):
                return None
            t = t.replace(b":f :" + name, b'"f":"' + name + b'"')
        if b":f :" in t:
            return None
    for prefix, rx, rep in _RARE_NAMED:
        if prefix in t:
            t = rx.sub(rep, t)
    by_maps = bool(strings)
    if t.count(b" :") != t.count(b", :") or b"[:" in t:
        t = _VALUE_KW.sub(rb'\1"\\u0002\2"', t)
        by_maps = True
    for old, new in _KEY_REPLACE:
        t = t.replace(old, new)
    if b"{:" in t or b", :" in t:
        t = _OTHER_KEY.sub(rb'\1"\2":', t)
        by_maps = True
    if b"\n " in t or b"\n," in t or t.startswith((b" ", b",")):
        t = _LEADING.sub(b"\n", b"\n" + t)[1:]
    t = _nulls(t.replace(b", ", b",").replace(b" ", b","))
    if strings:
        pieces = t.split(b"\x00")
        if len(pieces) != len(strings) + 1:
            return None
        out = [b""] * (2 * len(pieces) - 1)
        out[::2] = pieces
        out[1::2] = [b'"\\u0001' + s[1:] for s in strings]
        t = b"".join(out)
    return t, by_maps, n


def _edn(v: Any) -> Any:
    """A decoded value with its marked strings turned back into ``str`` and ``Keyword``."""
    t = type(v)
    if t is str:
        if v[:1] == "\x01":
            return v[1:]
        if v[:1] == "\x02":
            return _keyword(v[1:])
        return v
    if t is list:
        return [_edn(x) for x in v]
    return v


def _to_seconds(ops: list[Op]) -> bool:
    """Turn the decoded ops' times from Jepsen's nanoseconds into chaos's seconds; False (and
    the ops half done, to be dropped) when a time is past 2**53 ns, where the float that
    msgspec made was rounded: the maps keep the integer."""
    # The records are new and not yet seen by anyone: setting the field in place is the frozen
    # record's own construction, finished.
    set_field = msgspec.structs.force_setattr
    for op in ops:
        ns = op.time
        if not -_EXACT < ns < _EXACT:
            return False
        set_field(op, "time", ns / 1e9)
    return True


def _finished(text: bytes, n: int, heads: int) -> list[Op] | None:
    """The ops of JSON lines made by the shaped rewrite or the compiled pass, their names
    checked, their times in seconds and their vector-opening keywords made keywords again;
    None when any of that fails (the long way decides)."""
    try:
        ops: list[Op] = _OP_LINES.decode_lines(text)
    except msgspec.DecodeError:  # and ValidationError
        return None
    if len(ops) != n or not _names_are_keywords(ops) or not _to_seconds(ops):
        return None
    if heads:
        keywords = _KeywordCache()
        walk = _keywords_anywhere if heads == 2 else _keyword_heads
        try:
            for op in ops:
                if type(op.value) is list:
                    walk(op.value, keywords)
        except ValueError:
            return None
    return ops


def ops_from_block(
    block: bytes, position: int, op_from_edn: Callable[[Any, int], Op]
) -> list[Op] | None:
    """The ops of a block of whole EDN lines, one op map each, or ``None`` to say "read this
    block with the general reader". ``position`` is the number of ops before the block (an
    op without ``:index`` gets its position, as the general reader gives it)."""
    if _scan is not None:
        scanned = _scan(block)
        if scanned is not None:
            ops = _finished(*scanned)
            if ops is not None:
                return ops
    checked = _prechecked(block)
    if checked is None:
        return None
    t, strings, n = checked
    if not strings:
        shaped = _rewrite_shaped(t)
        if shaped is not None:
            ops = _finished(shaped[0], n, shaped[1])
            if ops is not None:
                return ops
    rewritten = _rewrite_long(t, strings, n)
    if rewritten is None:
        return None
    text, by_maps, n = rewritten
    if not by_maps:
        try:
            ops = _OP_LINES.decode_lines(text)
        except msgspec.ValidationError:
            pass  # an error that is not a name, no :time...: build from maps below
        except msgspec.DecodeError:
            return None
        else:
            if len(ops) != n or not _names_are_keywords(ops):
                return None
            if _to_seconds(ops):
                return ops
    try:
        maps = _ANY_LINES.decode_lines(text)
    except msgspec.DecodeError:
        return None
    return _from_maps(maps, position, op_from_edn) if len(maps) == n else None


def _from_maps(
    maps: list[Any], position: int, op_from_edn: Callable[[Any, int], Op]
) -> list[Op] | None:
    """The ops of decoded maps whose strings and keywords are marked (see :func:`_edn`)."""
    out: list[Op] = []
    for i, m in enumerate(maps):
        if type(m) is not dict:
            return None
        try:
            fixed = {_keyword(k): _edn(v) for k, v in m.items()}
            for k in ("type", "f", "process", "error"):
                v = m.get(k)
                # Named fields: a keyword arrives plain, a string marked. The general reader
                # makes both plain strings here, except a string :type, which it refuses.
                if type(v) is str:
                    if v[:1] != "\x01" and not _name_ok(v):
                        return None
                    fixed[Keyword(k)] = v[1:] if v[:1] == "\x01" else v
            out.append(op_from_edn(fixed, position + i))
        except (ValueError, TypeError):
            return None
    return out
