"""Complete lines out of files that grow by appends, read a chunk at a time.

The services append JSON lines to their event files while the run goes on; whoever follows them
(the event tail on the host, the SSH backend's collector pulling them from the nodes) reads each
file from where it stopped and must hand on only whole lines: the last piece of a chunk may be a
line still being written. This is that bookkeeping, written once.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["GrowingLines"]

K = TypeVar("K", bound=Hashable)


class GrowingLines(Generic[K]):
    """Per file (any key: a path, a ``(node, name)``), the offset read so far and the piece of a
    line not yet ended.

    ``feed`` takes the next chunk (read at :meth:`offset`) and returns the lines it completed,
    without their newlines. With ``cap``, a piece of a line that grows past ``cap`` bytes before
    its newline is dropped, so a writer that never ends a line cannot fill the reader's memory;
    ``feed`` then says so, and what follows up to the next newline arrives as a fragment that
    will not parse."""

    def __init__(self, cap: int | None = None) -> None:
        self._cap = cap
        self._offsets: dict[K, int] = {}
        self._partial: dict[K, bytes] = {}

    def offset(self, key: K) -> int:
        """Where the next chunk of ``key`` is to be read from."""
        return self._offsets.get(key, 0)

    def feed(self, key: K, chunk: bytes) -> tuple[list[bytes], bool]:
        """The lines ``chunk`` completes (in order), and whether an unfinished line over the cap
        was dropped."""
        self._offsets[key] = self.offset(key) + len(chunk)
        lines = (self._partial.pop(key, b"") + chunk).split(b"\n")
        rest = lines.pop()
        dropped = self._cap is not None and len(rest) > self._cap
        if rest and not dropped:
            self._partial[key] = rest
        return lines, dropped
