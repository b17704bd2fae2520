# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Jepsen's usual op lines rewritten as JSON lines in one compiled pass (see edn_fast.py).

Built in place by ``scripts/build-native`` (Cython, from PyPI); when it is not built, edn_fast
rewrites the same lines with whole-block ``bytes.replace`` passes instead. This pass reads a
narrower grammar than those and gives up (returns None) on anything outside it, so that the
caller takes its pure-Python way: each line ``{:key value, :key value}`` with ", " between
entries and one space after each key; the keys ``:type :f :value :time :process :index
:error``, each at most once, ``:type :f :process :index :time`` always; ``:type`` and ``:f`` a
keyword, ``:process`` a keyword or an integer, ``:index`` and ``:time`` an integer, ``:error`` a
keyword or nil; ``:value`` nil, true, false, an integer, or a vector of those and of vectors,
space-separated, and keywords inside them (Jepsen's micro-ops, ``[:append 5 3]``; Elle's,
``[:append :x 3]``);
a line's map may be written as a ``#jepsen.history.Op`` record (Jepsen 0.3's history files),
which every reader of ops takes as the map it holds.
Integers are ``-?[0-9]{1,18}``; everything else (strings, floats, other keywords, other tags, commas
inside vectors, tabs, non-ASCII bytes) gives up.

Keyword names are copied with the bytes the fast path's pattern takes; whether each is a name
the general reader reads is checked by the caller after decoding (the vector-opening ones are
flagged in the result, as ``_quote_heads``'s are).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

# What edn_fast checks before it uses this build (a stale one of another grammar is not used).
GRAMMAR = 2

cdef enum:
    K_TYPE = 1
    K_F = 2
    K_VALUE = 4
    K_TIME = 8
    K_PROCESS = 16
    K_INDEX = 32
    K_ERROR = 64
    K_REQUIRED = K_TYPE | K_F | K_TIME | K_PROCESS | K_INDEX
    MAX_DEPTH = 8
    MAX_DIGITS = 18


cdef inline bint _name_start(unsigned char c) noexcept nogil:
    # the first character of edn_fast's _KW: [A-Za-z*!_?<>=.]
    return (
        (b'a' <= c <= b'z') or (b'A' <= c <= b'Z') or c == b'*' or c == b'!' or c == b'_'
        or c == b'?' or c == b'<' or c == b'>' or c == b'=' or c == b'.'
    )


cdef inline bint _name_char(unsigned char c) noexcept nogil:
    # the rest of _KW: [A-Za-z0-9*+!\-_?<>=./:#']
    return (
        _name_start(c) or (b'0' <= c <= b'9') or c == b'+' or c == b'-' or c == b'/'
        or c == b':' or c == b'#' or c == b"'"
    )


cdef inline bint _delim(unsigned char c) noexcept nogil:
    return c == b' ' or c == b',' or c == b']' or c == b'}'


cdef Py_ssize_t _name(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, unsigned char* o, Py_ssize_t* j
) noexcept nogil:
    """A keyword at s[i] (its ':') as a JSON string; the offset after it, or -1."""
    i += 1
    if i >= n or not _name_start(s[i]):
        return -1
    o[j[0]] = b'"'
    j[0] += 1
    while i < n and _name_char(s[i]):
        o[j[0]] = s[i]
        j[0] += 1
        i += 1
    if i >= n or not _delim(s[i]):
        return -1
    o[j[0]] = b'"'
    j[0] += 1
    return i


cdef Py_ssize_t _integer(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, unsigned char* o, Py_ssize_t* j
) noexcept nogil:
    """An integer at s[i], copied; the offset after it, or -1."""
    cdef Py_ssize_t start = i
    if i < n and s[i] == b'-':
        o[j[0]] = b'-'
        j[0] += 1
        i += 1
    cdef Py_ssize_t digits = i
    while i < n and b'0' <= s[i] <= b'9':
        o[j[0]] = s[i]
        j[0] += 1
        i += 1
    if i == digits or i - digits > MAX_DIGITS or i >= n or not _delim(s[i]):
        return -1
    return i


cdef Py_ssize_t _word(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, unsigned char* o, Py_ssize_t* j,
    const char* edn, Py_ssize_t edn_len, const char* js, Py_ssize_t js_len
) noexcept nogil:
    """The literal ``edn`` at s[i] as ``js``; the offset after it, or -1."""
    if i + edn_len >= n or memcmp(s + i, edn, edn_len) != 0 or not _delim(s[i + edn_len]):
        return -1
    memcpy(o + j[0], js, js_len)
    j[0] += js_len
    return i + edn_len


cdef Py_ssize_t _value(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, unsigned char* o, Py_ssize_t* j,
    int depth, int* heads
) noexcept nogil:
    """A value at s[i] (see the module) as JSON; the offset after it, or -1."""
    cdef unsigned char c
    if i >= n:
        return -1
    c = s[i]
    if c == b'n':
        return _word(s, i, n, o, j, b"nil", 3, b"null", 4)
    if c == b't':
        return _word(s, i, n, o, j, b"true", 4, b"true", 4)
    if c == b'f':
        return _word(s, i, n, o, j, b"false", 5, b"false", 5)
    if c == b'-' or b'0' <= c <= b'9':
        return _integer(s, i, n, o, j)
    if c == b':' and depth > 0:
        # a keyword inside a vector (Elle's keys: [:append :x 1]): quoted like a head, and
        # every string in such a block is one (this grammar has no strings)
        heads[0] = 2
        return _name(s, i, n, o, j)
    if c != b'[' or depth >= MAX_DEPTH:
        return -1
    o[j[0]] = b'['
    j[0] += 1
    i += 1
    if i < n and s[i] == b']':
        o[j[0]] = b']'
        j[0] += 1
        return i + 1
    if i < n and s[i] == b':':
        i = _name(s, i, n, o, j)
        if heads[0] == 0:
            heads[0] = 1
    else:
        i = _value(s, i, n, o, j, depth + 1, heads)
    while i >= 0:
        if i >= n:
            return -1
        if s[i] == b']':
            o[j[0]] = b']'
            j[0] += 1
            return i + 1
        if s[i] != b' ':
            return -1
        o[j[0]] = b','
        j[0] += 1
        i = _value(s, i + 1, n, o, j, depth + 1, heads)
    return -1


cdef int _key(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The key at s[i] (its ':', a space after it) as its bit, or 0."""
    cdef Py_ssize_t k = i + 1
    while k < n and s[k] != b' ':
        k += 1
    cdef Py_ssize_t m = k - i - 1
    cdef const unsigned char* p = s + i + 1
    if m == 4 and memcmp(p, b"type", 4) == 0:
        return K_TYPE
    if m == 1 and p[0] == b'f':
        return K_F
    if m == 5 and memcmp(p, b"value", 5) == 0:
        return K_VALUE
    if m == 4 and memcmp(p, b"time", 4) == 0:
        return K_TIME
    if m == 7 and memcmp(p, b"process", 7) == 0:
        return K_PROCESS
    if m == 5 and memcmp(p, b"index", 5) == 0:
        return K_INDEX
    if m == 5 and memcmp(p, b"error", 5) == 0:
        return K_ERROR
    return 0


cdef Py_ssize_t _line(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t n, unsigned char* o, Py_ssize_t* j,
    int* heads
) noexcept nogil:
    """One op line at s[i] (its newline included) as a JSON line; the offset after it, or -1."""
    cdef int seen = 0
    cdef int key
    cdef Py_ssize_t m
    while i < n and (s[i] == b' ' or s[i] == b','):
        i += 1  # what the reader put in place of the history's opening bracket
    if i + 18 < n and memcmp(s + i, b"#jepsen.history.Op", 18) == 0:
        i += 18  # Jepsen 0.3's record of an op: read as the map it holds
    if i >= n or s[i] != b'{':
        return -1
    o[j[0]] = b'{'
    j[0] += 1
    i += 1
    while True:
        if i >= n or s[i] != b':':
            return -1
        key = _key(s, i, n)
        if key == 0 or seen & key:
            return -1
        seen |= key
        m = (
            4 if key == K_TYPE else 1 if key == K_F else 7 if key == K_PROCESS
            else 4 if key == K_TIME else 5
        )
        o[j[0]] = b'"'
        memcpy(o + j[0] + 1, s + i + 1, m)
        o[j[0] + 1 + m] = b'"'
        o[j[0] + 2 + m] = b':'
        j[0] += m + 3
        i += m + 2  # the colon, the name, the space
        if i >= n:
            return -1
        if key == K_TYPE or key == K_F:
            i = _name(s, i, n, o, j) if s[i] == b':' else -1
        elif key == K_PROCESS:
            i = _name(s, i, n, o, j) if s[i] == b':' else _integer(s, i, n, o, j)
        elif key == K_TIME or key == K_INDEX:
            i = _integer(s, i, n, o, j)
        elif key == K_ERROR:
            i = _name(s, i, n, o, j) if s[i] == b':' else _word(s, i, n, o, j, b"nil", 3, b"null", 4)
        else:
            i = _value(s, i, n, o, j, 0, heads)
        if i < 0 or i >= n:
            return -1
        if s[i] == b'}':
            break
        if s[i] != b',' or i + 1 >= n or s[i + 1] != b' ':
            return -1
        o[j[0]] = b','
        j[0] += 1
        i += 2
    if (seen & K_REQUIRED) != K_REQUIRED or i + 1 >= n or s[i + 1] != b'\n':
        return -1
    o[j[0]] = b'}'
    o[j[0] + 1] = b'\n'
    j[0] += 2
    return i + 2


def jepsen_lines_to_json(bytes block):
    """``block`` (whole lines, each ending in a newline) as JSON lines, the number of lines and
    where the quoted keywords the caller turns back into keywords are: 0 none, 1 only opening
    vectors, 2 anywhere inside a vector; None when any line is outside this pass's grammar (see
    the module)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(block)
    cdef const unsigned char* s = <const unsigned char*> PyBytes_AS_STRING(block)
    # every rewrite adds at most one byte per two it reads (":k " -> "\"k\":", "nil" ->
    # "null"), so twice the input is room enough
    cdef unsigned char* o = <unsigned char*> malloc(2 * n + 16)
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t j = 0
    cdef Py_ssize_t lines = 0
    cdef int heads = 0
    if o == NULL:
        raise MemoryError()
    with nogil:
        while i < n:
            i = _line(s, i, n, o, &j, &heads)
            if i < 0:
                break
            lines += 1
    try:
        if i < 0 or lines == 0:
            return None
        return PyBytes_FromStringAndSize(<char*> o, j), lines, heads
    finally:
        free(o)
