"""The EDN value types chaos reads into Python, and the read error.

What a Clojure reader makes of each EDN form, and what chaos makes of it:

===================  ===========================  ==========================================
EDN                  Clojure                      Python
===================  ===========================  ==========================================
``nil true false``   nil, Boolean                 ``None``, ``True``, ``False``
``42 42N 0x2A``      Long, BigInt                 ``int``
``1.5 1e3 ##Inf``    Double                       ``float``
``1.5M``             BigDecimal                   ``decimal.Decimal``
``1/2``              Ratio (``2/1`` is 2)         ``fractions.Fraction`` (``int`` if whole)
``"a\\n"``           String                       ``str``
``\\a \\newline``    Character                    :class:`Char`
``:a :ns/a``         Keyword                      :class:`Keyword`
``a ns/a``           Symbol                       :class:`Symbol`
``[1 2]``            vector                       ``list``
``(1 2)``            list                         :class:`EdnList` (``== [1, 2]``, as in Clojure)
``{:a 1}``           map                          ``dict``
``#{1 2}``           set                          ``frozenset``
``#tag form``        tagged literal / record      :class:`Tagged` (tag, form and source text)
===================  ===========================  ==========================================

Map keys and set members must be hashable in Python: a vector or list there becomes a ``tuple``,
a map a :class:`FrozenMap`. Equality follows Clojure's where Python lets it: a :class:`Symbol` or
:class:`Char` equals only its own kind (``'a``, ``\\a`` and ``"a"`` differ), while a
:class:`Keyword` still equals the plain string of its name — chaos has always compared op fields
(``:type``, ``:f``) that way; code that must tell ``:a`` from ``"a"`` checks the type (the
checkers do: ``chaos.checkers.models.freeze``).

Apart from the reader (chaos.histories.edn_reader) so that its fast path
(chaos.histories.edn_fast) and other readers can build the same values without importing it.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["Char", "EdnError", "EdnList", "FrozenMap", "Keyword", "Symbol", "Tagged"]


class EdnError(ValueError):
    """Text that is not EDN; ``pos`` is the character offset where reading stopped.

    ``incomplete`` is True when the text ended inside a form (an open collection or string, a
    tag with nothing after it): more text might complete it. ``line`` is the 1-based line of
    ``pos`` when the reader that raised it knew it (0: not known)."""

    def __init__(self, message: str, pos: int, *, incomplete: bool = False, line: int = 0) -> None:
        super().__init__(message)
        self.pos = pos
        self.incomplete = incomplete
        self.line = line


class Keyword(str):
    """An EDN keyword, without its colon (``:ns/a`` is ``Keyword("ns/a")``). Compares equal
    to the plain string of its name."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Keyword({str.__repr__(self)})"


class _Exact(str):
    """A string-like EDN value equal only to values of its own class (and hashed apart)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, str.__str__(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str.__repr__(self)})"


class Symbol(_Exact):
    """An EDN symbol (``foo``, ``ns/foo``, ``/``); not equal to the string ``"foo"``."""

    __slots__ = ()


class Char(_Exact):
    """An EDN character (``\\a`` is ``Char("a")``, ``\\newline`` is ``Char("\\n")``)."""

    __slots__ = ()


class EdnList(list[Any]):
    """An EDN list ``( … )``: a Python list that remembers it was a list, not a vector.

    Equal to a vector of the same items, as ``(= '(1 2) [1 2])`` is in Clojure."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"EdnList({list.__repr__(self)})"


class FrozenMap(dict[Any, Any]):
    """A map where Python needs a hashable value (a map as a map key or a set member).

    Equal to a ``dict`` with the same items; refuses to change after it is built."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _frozen(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a FrozenMap cannot change")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _frozen
    __ior__ = _frozen


class Tagged(str):
    """A tagged literal kept as its source text (``#inst "2020-01-01"``); ``tag`` is the tag
    without ``#`` (``inst``, ``jepsen.history.Op``), ``value`` the form it tags (a ``str`` for
    ``#inst``/``#uuid``, a ``dict`` for a record). Written back unchanged by the writer."""

    tag: str
    value: Any

    def __new__(cls, text: str, tag: str, value: Any) -> Tagged:
        self = super().__new__(cls, text)
        self.tag = tag
        self.value = value
        return self

    def __repr__(self) -> str:
        return f"Tagged({str.__repr__(self)})"
