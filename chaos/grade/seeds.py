"""Every run's seed, derived from the grade's seed: a whole grading is reproducible.

A hash rather than ``random.Random(grade_seed)`` drawn in order: a run's seed must not depend on
which other students, configurations or repeats are in the grading (adding a late submission, or
resuming, must leave every other run's seed as it was).
"""

from __future__ import annotations

import hashlib

from chaos.run_option import SEED_SPAN


def run_seed(grade_seed: int, student: str, config: str, repeat: int) -> int:
    """The seed of one run; a pure function of its four coordinates."""
    # the separator cannot occur in an int, and names are length-prefixed: ("a:b", "c") and
    # ("a", "b:c") cannot collide
    text = f"{grade_seed}\0{len(student)}:{student}\0{len(config)}:{config}\0{repeat}"
    digest = hashlib.sha256(text.encode()).digest()
    return 1 + int.from_bytes(digest[:8], "big") % (SEED_SPAN - 1)
