"""Text from inputs chaos does not trust, made safe to print on a terminal.

Task ids, event fields, error messages and whole history lines come from the code under test or
from a file of unknown origin; an escape sequence in one of them would drive the user's terminal
(set its title, rewrite the screen, or worse on old emulators). Every printer of such text goes
through :func:`clean`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["clean", "shortened"]

# C0 and C1 control characters and DEL, but not tab or newline
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (9, 10)}


def clean(value: Any) -> str:
    """``value`` as text with every control character escaped (``\\x1b``)."""
    return str(value).translate(_CONTROL)


def shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word's end, with an ellipsis when cut:
    a progress line or a summary must not end mid-number ("revisions 20, 2" of "20, 23")."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"
