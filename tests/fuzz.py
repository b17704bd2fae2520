"""How many examples the property tests draw.

A quick pass by default, so that ``pytest tests/unit`` stays under 30 s on a busy two-core
machine; the thorough pass where the whole suite runs: ``scripts/test`` (CI) sets
``CHAOS_FUZZ=full``. Each test keeps its proportion: ``examples(200)`` draws 200 in full, 40 in
the quick pass.
"""

from __future__ import annotations

import os

FULL = os.environ.get("CHAOS_FUZZ", "quick") == "full"
QUICK_SHARE = 5  # the quick pass draws a fifth of the examples


def examples(n: int) -> int:
    return n if FULL else max(10, n // QUICK_SHARE)
