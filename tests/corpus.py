"""The shared corpus of recorded histories, beside the repository (``../shared/data``).

A developer's machine has it; a user's clone does not. Tests that replay it carry the ``corpus``
marker and are skipped, with the missing folder named, when it is absent (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

# CHAOS_SHARED_DATA: the corpus elsewhere (a git worktree does not sit beside ../shared).
SHARED_DATA = Path(
    os.environ.get("CHAOS_SHARED_DATA")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data"
)
PORCUPINE = SHARED_DATA / "porcupine"
