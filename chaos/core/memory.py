"""Handing memory back to the system between the phases of a run.

The final reads hold what the code under test made large (etcd's record, the proxies' journals)
and free it once ``final.json`` is written; the checks then load it again. CPython frees the
objects, but glibc keeps the freed pages in its heaps (one per thread that allocated: the watch's,
the journal collection's), so without :func:`trim` the orchestrator's peak is the final reads'
memory *plus* the checks'. :func:`trim` gives the free pages back between the two.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc

__all__ = ["trim"]


def trim() -> None:
    """Collect garbage and return free heap pages to the system (glibc's ``malloc_trim``; a
    no-op where there is no glibc)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)
