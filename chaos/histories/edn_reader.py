"""The EDN grammar (https://github.com/edn-format/edn), read as Clojure's ``clojure.edn`` reads it.

:func:`read_form` reads one form at an offset; :func:`iter_forms` the forms of a text one after
another, with where each starts and ends; :func:`read_edn_forms` the top-level forms of a text or
a file; :func:`loads` exactly one form. Values are the types of :mod:`chaos.histories.edn_types`.

What is read, beyond the obvious: ``;`` comments to the end of the line, ``#_`` discards the next
form (``#_ #_ a b`` both), commas are whitespace (and so is everything Java's
``Character.isWhitespace`` says is); collections span any lines; ``#tag form`` for any tag
(``#inst``, ``#uuid``, records such as ``#jepsen.history.Op{…}``); ``^meta form`` (the metadata
is read and dropped: it never changes a value's equality); characters ``\\a``, ``\\newline``,
``\\u0041``, ``\\o101``; strings with ``\\t \\r \\n \\\\ \\" \\b \\f \\uXXXX`` and octal escapes;
integers in decimal, ``0x`` hex, ``0`` octal and ``NrDIGITS`` radix forms, with ``N``; floats
with ``M`` (BigDecimal); ratios; ``##Inf ##-Inf ##NaN``. What Clojure refuses is an
:class:`~chaos.histories.edn_types.EdnError` with the offset: a number like ``1a`` or ``08``, an
unknown escape or character name, ``::auto`` keywords, a map with an odd number of forms or a
repeated key (and, a limit of Python's, two keys Python holds equal: ``1`` and ``1.0``, ``:a``
and ``"a"``), a set with a repeated member.

Nesting uses an explicit stack, so deep input cannot overflow Python's recursion; it is bounded
(:data:`~chaos.histories.limits.MAX_DEPTH`) because the code after the reader walks values
recursively.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from chaos.histories.edn_types import (
    Char,
    EdnError,
    EdnList,
    FrozenMap,
    Keyword,
    Symbol,
    Tagged,
)
from chaos.histories.limits import MAX_DEPTH, MAX_INT_DIGITS

__all__ = [
    "is_keyword_name",
    "iter_forms",
    "line_of",
    "loads",
    "read_edn_forms",
    "read_form",
    "skip_space",
]

# Java's Character.isWhitespace, plus the comma (Clojure's reader's whitespace).
_WS_CHARS = " \t\n\r\f\v,\x1c-\x1f\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000"
# What ends a token: whitespace and the reader's terminating macro characters.
_DELIM = _WS_CHARS + r"()\[\]{}\";\\^"
# Atomic: a comment never gives back its tail to be read as a token ("; end" is not "d").
_SPACE = rf"(?>(?:[{_WS_CHARS}]+|;[^\n\r]*)+)"
_FORMS = rf"""
    (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<open>\#\{{|[(\[{{])
  | (?P<close>[)\]}}])
  | (?P<disc>\#_)
  | (?P<special>\#\#[^{_DELIM}]*)
  | (?P<tag>\#[^{_DELIM}]*)
  | (?P<meta>\^)
  | (?P<char>\\.[^{_DELIM}]*)
  | (?P<atom>[^{_DELIM}\#][^{_DELIM}]*)
"""
# One token per match, with the whitespace and comments before it folded in.
_FORM_TOKEN = re.compile(rf"(?:{_SPACE})? (?:{_FORMS})", re.X | re.S)
_SPACE_ONLY = re.compile(rf"(?:{_SPACE})?", re.X | re.S)

_INT = re.compile(
    r"([-+]?)(?:(0)|([1-9][0-9]*)|0[xX]([0-9A-Fa-f]+)|0([0-7]+)|([1-9][0-9]?)[rR]([0-9A-Za-z]+))(N)?"
)
_BAD_OCTAL = re.compile(r"[-+]?0[0-9]+N?")  # Clojure: "Invalid number" (08 is not octal)
_FLOAT = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")
_RATIO = re.compile(r"([-+]?[0-9]+)/([0-9]+)")
# Clojure's symbol pattern: an optional namespace ending in "/", then a name; neither may start
# with a digit (a keyword's name may), nor be empty.
_SYMBOL = re.compile(r"(?:[^0-9/].*/)?(?:/|[^0-9/][^/]*)", re.S)
_KEYWORD = re.compile(r"(?:[^/].*/)?(?:/|[^/][^/]*)", re.S)
_CHAR_NAMES = {
    "newline": "\n",
    "space": " ",
    "tab": "\t",
    "return": "\r",
    "formfeed": "\f",
    "backspace": "\b",
}
_STR_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.S)
_STR_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}
_SPECIALS = {"Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
_CONSTANTS: dict[str, Any] = {"nil": None, "true": True, "false": False}
_CLOSER = {"[": "]", "(": ")", "{": "}", "#{": "}"}
_DISCARDED = object()
_SURROGATE = re.compile("[\ud800-\udfff]")


def unescape(body: str, pos: int) -> str:
    """A string literal's body (between its quotes) with its escapes decoded."""
    if "\\" not in body:
        return body

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "u":
            if len(e) == 5:
                return chr(int(e[1:], 16))
            raise EdnError("a \\u escape needs 4 hex digits", pos)
        if e[0] in "01234567":
            code = int(e, 8)
            if code > 0o377:
                raise EdnError(f"octal escape \\{e} is past \\377", pos)
            return chr(code)
        if e in _STR_UNESCAPE:
            return _STR_UNESCAPE[e]
        raise EdnError(f"unknown string escape \\{e}", pos)

    out = _STR_ESCAPE.sub(sub, body)
    if _SURROGATE.search(out):
        # Java strings are UTF-16: "\ud83d\ude00" is one character there, and here.
        with contextlib.suppress(UnicodeDecodeError):  # a lone surrogate stays as written
            out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return out


def _number(text: str, pos: int) -> Any:
    m = _INT.fullmatch(text)
    if m is not None:
        sign, zero, dec, hexa, octal, radix, rdigits, _big = m.groups()
        if len(text) > MAX_INT_DIGITS:
            raise EdnError(
                f"an integer of {len(text)} digits, more than chaos reads ({MAX_INT_DIGITS})", pos
            )
        if radix is not None and not 2 <= int(radix) <= 36:
            raise EdnError(f"radix {radix} out of range in {text[:40]!r}", pos)
        try:
            if zero is not None:
                n = 0
            elif dec is not None:
                n = int(dec)
            elif hexa is not None:
                n = int(hexa, 16)
            elif octal is not None:
                n = int(octal, 8)
            else:
                n = int(rdigits, int(radix))
        except ValueError:  # a digit past the radix; or more digits than Python converts
            raise EdnError(f"invalid number {text[:40]!r}", pos) from None
        return -n if sign == "-" else n
    if _BAD_OCTAL.fullmatch(text):
        raise EdnError(f"invalid number {text[:40]!r}", pos)
    if text.endswith("M") and _FLOAT.fullmatch(text, 0, len(text) - 1):
        try:
            return Decimal(text[:-1])
        except InvalidOperation:
            raise EdnError(f"invalid number {text[:40]!r}", pos) from None
    if _FLOAT.fullmatch(text):
        return float(text)
    m = _RATIO.fullmatch(text)
    if m is not None:
        try:
            num, den = int(m.group(1)), int(m.group(2))
        except ValueError:
            raise EdnError(f"invalid number {text[:40]!r}", pos) from None
        if den == 0:
            raise EdnError(f"ratio {text!r} divides by zero", pos)
        r = Fraction(num, den)
        return r.numerator if r.denominator == 1 else r
    raise EdnError(f"invalid number {text[:40]!r}", pos)


def _bad_name(name: str) -> bool:
    return name.endswith(":") or "::" in name


_TOKEN_ONLY = re.compile(rf"[^{_DELIM}]+")


def is_keyword_name(name: str) -> bool:
    """Whether ``":" + name`` reads back as the keyword ``name``."""
    return bool(
        name
        and name[0] not in ":#"
        and _TOKEN_ONLY.fullmatch(name)
        and not _bad_name(name)
        and _KEYWORD.fullmatch(name)
    )


def _atom(text: str, pos: int) -> Any:
    c = text[0]
    if c == ":":
        name = text[1:]
        if not name or name[0] == ":" or _bad_name(name) or not _KEYWORD.fullmatch(name):
            raise EdnError(f"invalid keyword {text[:40]!r}", pos)
        return Keyword(name)
    if c.isdigit() or (c in "+-" and len(text) > 1 and text[1].isdigit()):
        return _number(text, pos)
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    if _bad_name(text) or not _SYMBOL.fullmatch(text):
        raise EdnError(f"invalid symbol {text[:40]!r}", pos)
    return Symbol(text)


def _char(body: str, pos: int) -> Char:
    if len(body) == 1:
        return Char(body)
    if body in _CHAR_NAMES:
        return Char(_CHAR_NAMES[body])
    if body[0] == "u":
        if len(body) == 5 and all(c in "0123456789abcdefABCDEF" for c in body[1:]):
            code = int(body[1:], 16)
            if 0xD800 <= code <= 0xDFFF:
                raise EdnError(f"invalid character \\{body}", pos)
            return Char(chr(code))
    elif body[0] == "o" and 2 <= len(body) <= 4 and all(c in "01234567" for c in body[1:]):
        code = int(body[1:], 8)
        if code <= 0o377:
            return Char(chr(code))
    raise EdnError(f"unsupported character \\{body[:20]}", pos)


def _hashable(v: Any) -> Any:
    """``v`` as a map key or set member: Python can only hash immutable values."""
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict) and not isinstance(v, FrozenMap):
        return FrozenMap((_hashable(k), _hashable(x)) for k, x in v.items())
    return v


def _same(a: Any, b: Any) -> bool:
    """Whether two keys Python holds equal are the same EDN value (a true duplicate)."""
    return type(a) is type(b) and (not isinstance(a, tuple) or all(map(_same, a, b)))


def _build(kind: str, items: list[Any], pos: int) -> Any:
    if kind == "[":
        return items
    if kind == "(":
        return EdnList(items)
    if kind == "#{":
        out: set[Any] = set()
        for x in items:
            h = _hashable(x)
            if h in out:
                raise EdnError(f"set literal repeats the member {x!r}", pos)
            out.add(h)
        return frozenset(out)
    if len(items) % 2:
        raise EdnError("map literal has an odd number of forms", pos)
    m: dict[Any, Any] = {}
    for i in range(0, len(items), 2):
        k = _hashable(items[i])
        if k in m:
            old = next(x for x in m if x == k)
            if _same(old, k):
                raise EdnError(f"map literal repeats the key {k!r}", pos)
            raise EdnError(
                f"map keys {old!r} and {k!r} are different in EDN but equal in Python; "
                "chaos cannot hold both",
                pos,
            )
        m[k] = items[i + 1]
    return m


def read_form(text: str, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
    """Read one form starting at ``pos`` (whitespace and comments first are skipped); return it
    and the offset just after it.

    Raises :class:`EdnError` (never anything else) on bad input — ``incomplete`` set when the
    text ends inside the form — and :class:`EOFError` if no form starts before ``end``.
    """
    if end is None:
        end = len(text)
    match = _FORM_TOKEN.match
    # Frames: a collection being filled [opener, items, start]; or a prefix waiting for the
    # next form: ("#_",) drops it, ("#", tag, start) tags it, ("^", start) drops the first
    # (the metadata) and becomes ("^^", start), which passes the second through.
    stack: list[Any] = []
    while True:
        m = match(text, pos, end)
        if m is None:
            _no_form(text, pos, end, stack)
        kind: str = m.lastgroup  # type: ignore[assignment]
        tok = m.group(kind)
        start = m.start(kind)
        pos = m.end()
        if kind in ("open", "disc", "tag", "meta"):
            stack.append(_frame(kind, tok, start, len(stack)))
            continue
        value = _complete(kind, tok, start, stack)
        if _place(value, text, pos, stack):
            return stack.pop(), pos


def _no_form(text: str, pos: int, end: int, stack: list[Any]) -> NoReturn:
    """No token starts at ``pos``: the text ended (EOFError between forms), or why it cannot go on."""
    pos = _SPACE_ONLY.match(text, pos, end).end()  # type: ignore[union-attr]
    if pos >= end:
        if stack:
            raise EdnError("the text ends inside a form", end, incomplete=True)
        raise EOFError
    c = text[pos]
    if c == '"':
        raise EdnError("unterminated string", pos, incomplete=True)
    if c == "\\":  # a backslash as the last character
        raise EdnError("the text ends inside a character", pos, incomplete=True)
    raise EdnError(f"unexpected character {c!r}", pos)


def _frame(kind: str, tok: str, start: int, depth: int) -> Any:
    """The frame an opener or a prefix (``#_``, ``#tag``, ``^``) pushes (see read_form)."""
    if depth >= MAX_DEPTH:
        raise EdnError(f"values nest deeper than {MAX_DEPTH} levels", start)
    if kind == "open":
        return [tok, [], start]
    if kind == "disc":
        return ("#_",)
    if kind == "meta":
        return ("^", start)
    name = tok[1:]
    if not name:
        raise EdnError("# followed by nothing a tag or dispatch can be", start)
    if name[0] == ":":
        raise EdnError(f"namespaced map syntax {tok[:40]!r} is not EDN", start)
    if _bad_name(name) or not _SYMBOL.fullmatch(name) or not name[0].isalpha():
        raise EdnError(f"invalid tag {tok[:40]!r}", start)
    return ("#", name, start)


def _complete(kind: str, tok: str, start: int, stack: list[Any]) -> Any:
    """The value a closer (its collection, popped) or a scalar token completes."""
    if kind == "close":
        if not stack or not isinstance(stack[-1], list):
            raise EdnError(f"unmatched {tok!r}", start)
        opener, items, _ = stack.pop()
        if _CLOSER[opener] != tok:
            raise EdnError(f"{opener!r} closed by {tok!r}", start)
        return _build(opener, items, start)
    if kind == "atom":
        return _atom(tok, start)
    if kind == "str":
        return unescape(tok[1:-1], start)
    if kind == "char":
        return _char(tok[1:], start)
    name = tok[2:]  # special: ##Inf ##-Inf ##NaN
    if name not in _SPECIALS:
        raise EdnError(f"unknown symbolic value ##{name[:20]}", start)
    return _SPECIALS[name]


def _place(value: Any, text: str, pos: int, stack: list[Any]) -> bool:
    """Let the pending prefixes consume a complete form, then place it in its collection. True
    when that makes the whole top-level form, left as ``stack``'s one item."""
    while True:
        if not stack:
            if value is _DISCARDED:
                return False
            stack.append(value)
            return True
        top = stack[-1]
        if isinstance(top, list):
            if value is not _DISCARDED:
                top[1].append(value)
            return False
        if value is _DISCARDED:
            return False  # "#tag #_ x y", "^ #_ x m y": the discard left nothing yet; keep waiting
        stack.pop()
        what = top[0]
        if what == "#_":
            value = _DISCARDED
        elif what == "#":
            value = Tagged(text[top[2] : pos], top[1], value)
        elif what == "^":
            if not isinstance(value, (dict, Keyword, Symbol, str)):
                raise EdnError("metadata must be a map, keyword, symbol or string", top[1])
            stack.append(("^^", top[1]))
            return False
        elif not isinstance(value, (list, dict, frozenset, Symbol)):  # "^^": the form it was for
            raise EdnError("metadata can only be put on collections and symbols", top[1])


def skip_space(text: str, pos: int, end: int | None = None) -> int:
    """The offset of the first character at or after ``pos`` that is not whitespace or comment."""
    return _SPACE_ONLY.match(text, pos, len(text) if end is None else end).end()  # type: ignore[union-attr]


def line_of(text: str, pos: int) -> int:
    """The 1-based line number of offset ``pos``."""
    return text.count("\n", 0, pos) + 1


def iter_forms(text: str, pos: int = 0) -> Iterator[tuple[Any, int, int]]:
    """Each top-level form of ``text`` from ``pos`` on, as ``(form, start, end)`` offsets;
    discarded forms (``#_ x``) are skipped. Raises :class:`EdnError` at the first bad form."""
    n = len(text)
    while True:
        pos = skip_space(text, pos)
        if pos >= n:
            return
        start = pos
        try:
            form, pos = read_form(text, pos)
        except EOFError:
            return  # only discarded forms were left
        yield form, skip_space(text, start), pos


def read_edn_forms(source: str | Path) -> Iterator[Any]:
    """The top-level forms of EDN ``source``: text (a ``str``) or a file (a ``Path``, read as
    UTF-8). A file that is one vector of forms yields that one vector.

    Raises :class:`EdnError` at the first form that is not EDN, with ``line`` set; a file that
    is not UTF-8 is an :class:`EdnError` too (at the first bad byte's line).
    """
    if isinstance(source, Path):
        data = source.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise EdnError(f"bytes that are not UTF-8 at line {line}", e.start, line=line) from None
    else:
        text = source
    pos, n = 0, len(text)
    while (pos := skip_space(text, pos)) < n:
        start = pos
        try:
            form, pos = read_form(text, pos)
        except EOFError:
            return  # only discarded forms were left
        except EdnError as e:
            # A form cut off is named by where it starts; a bad one by where it went wrong.
            e.line = line_of(text, start if e.incomplete else e.pos)
            raise
        yield form


def loads(text: str) -> Any:
    """Read exactly one EDN form from ``text`` (whitespace and comments around it allowed)."""
    try:
        value, pos = read_form(text)
    except EOFError:
        raise EdnError("no form in input", len(text)) from None
    rest = skip_space(text, pos)
    if rest < len(text):
        try:
            read_form(text, rest)
        except EOFError:
            return value  # only discarded forms follow
        raise EdnError("more than one form in input", rest)
    return value
