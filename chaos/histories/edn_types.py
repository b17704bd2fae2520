"""The EDN value types chaos reads into Python: keywords, tagged literals, and the read error.

Apart from the reader (chaos.histories.edn) so that its fast path (chaos.histories.edn_fast)
can build the same values without importing the reader it serves.
"""

from __future__ import annotations

from typing import Any


class EdnError(ValueError):
    """Text that is not EDN; ``pos`` is the character offset where reading stopped."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


class Keyword(str):
    """An EDN keyword, without its colon. Compares equal to the plain string of its name."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Keyword({str.__repr__(self)})"


class Tagged(str):
    """A tagged literal kept as its source text (``#inst "2020-01-01"``); ``value`` is the form."""

    tag: str
    value: Any

    def __new__(cls, text: str, tag: str, value: Any) -> Tagged:
        self = super().__new__(cls, text)
        self.tag = tag
        self.value = value
        return self

    def __repr__(self) -> str:
        return f"Tagged({str.__repr__(self)})"
