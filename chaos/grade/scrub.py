"""What a student's feedback pack must not carry: the grading machine's own paths.

A graded run's folder names the submission as the instructor gave it (``/srv/grading/subs/ada``),
the grade's folder on the instructor's disk, and sometimes a worker's temporary copy. A pack
copies runs for a student to open at home, so every copied text file goes through
:meth:`Scrub.text`, which puts the student's own terms in their place; :meth:`Scrub.leaks` is
the check after the pack is written, over every byte of it, and a pack that still names one is
refused (never handed out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["SOLUTION", "Scrub"]

# how a pack names the folder holding the student's protocol.py
SOLUTION = "path/to/your/solution"
# a grade worker's temporary copy of a submission (chaos.grade.task: tempfile prefix)
_WORKER_COPY = re.compile(
    r"(?:/[^\s\"'<>/]+)*/chaos-grade-[A-Za-z0-9_]+(?:/submission/[^\s\"'<>/]+)?"
)


@dataclass(frozen=True, slots=True)
class Scrub:
    """Replacements for one student's pack, longest path first (a folder inside another is
    replaced before the folder that holds it)."""

    solution: str  # the student's submission as the grade was given it
    grade_dir: str  # the grade's out folder, absolute
    submissions: str  # the class's submissions folder, absolute
    # what names another row in the grade's folder: its submission's path (also as text()
    # writes it), its run folders; none may appear in this student's pack
    others: tuple[str, ...] = ()

    def pairs(self) -> list[tuple[str, str]]:
        pairs = [
            (self.solution, SOLUTION),
            (self.grade_dir, "grade"),
            (self.submissions, "submissions"),
        ]
        return sorted((p for p in pairs if p[0] and p[0] != "/"), key=lambda p: -len(p[0]))

    def text(self, s: str) -> str:
        for old, new in self.pairs():
            s = s.replace(old, new)
        return _WORKER_COPY.sub(SOLUTION, s)

    def forbidden(self) -> list[str]:
        """The strings no byte of the pack may hold."""
        out = [p for p, _ in self.pairs()] + [o for o in self.others if o]
        return sorted(set(out), key=lambda x: -len(x))

    def leaks(self, blobs: Iterable[tuple[str, bytes]]) -> list[str]:
        """``name: what`` for each forbidden string found in the named blobs."""
        found = []
        needles = [(f, f.encode()) for f in self.forbidden()]
        for name, data in blobs:
            for text, needle in needles:
                if needle in data:
                    found.append(f"{name}: {text}")
            if b"chaos-grade-" in data:
                found.append(f"{name}: a grade worker's path")
        return found
