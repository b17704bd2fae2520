"""The shared corpus of recorded histories, beside the repository (``../shared/data``).

A developer's machine has it; a user's clone does not. Tests that replay it carry the ``corpus``
marker and are skipped, with the missing folder named, when it is absent (tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PORCUPINE = SHARED_DATA / "porcupine"
