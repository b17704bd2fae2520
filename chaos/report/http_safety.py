"""What ``chaos serve`` may answer with, for a file of a run.

A run folder holds what chaos wrote (the report, its JSON artefacts, plots) and what the code
under test wrote or printed (``live/``: its events and claims; ``logs/``: its output; ``mounts/``:
its source). A page of the second kind served as HTML would run the student's script in the
instructor's browser, with the server's origin: so only the report is ever HTML, known artefacts
get their own type, and everything else is plain text or a download. Every file answer carries a
sandboxing Content-Security-Policy (no script, no plugin, no same origin, even if a browser sniffs
or an SVG brings its own script), and ``nosniff``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["SANDBOX_CSP", "UNTRUSTED_DIRS", "FileAnswer", "answer_for", "public_error"]

SANDBOX_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"
# folders of a run written by (or copied from) the code under test
UNTRUSTED_DIRS = frozenset({"live", "logs", "mounts"})

_TEXT = "text/plain; charset=utf-8"
# the artefacts chaos writes, by suffix; any other file is a download
_KNOWN = {
    ".json": "application/json",
    ".jsonl": _TEXT,
    ".edn": _TEXT,
    ".txt": _TEXT,
    ".log": _TEXT,
    ".yaml": _TEXT,
    ".yml": _TEXT,
    ".md": _TEXT,
    ".csv": _TEXT,
    ".py": _TEXT,
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
_TEXT_SUFFIXES = frozenset(s for s, t in _KNOWN.items() if t == _TEXT) | {".json"}


@dataclass(frozen=True, slots=True)
class FileAnswer:
    content_type: str
    headers: tuple[tuple[str, str], ...]


def answer_for(rel_in_run: PurePosixPath) -> FileAnswer:
    """How to serve the file at ``rel_in_run`` (its path inside the run folder)."""
    name = rel_in_run.name
    suffix = rel_in_run.suffix.lower()
    untrusted = bool(rel_in_run.parts) and rel_in_run.parts[0] in UNTRUSTED_DIRS
    csp = ("Content-Security-Policy", SANDBOX_CSP)
    if untrusted:
        # text the browser shows as text, whatever it holds; anything else only as a download
        if suffix in _TEXT_SUFFIXES:
            return FileAnswer(_TEXT, (csp,))
    elif suffix in _KNOWN:
        return FileAnswer(_KNOWN[suffix], (csp,))
    safe = "".join(c for c in name if c.isalnum() or c in "._-")[:100] or "file"
    return FileAnswer(
        "application/octet-stream",
        (csp, ("Content-Disposition", f'attachment; filename="{safe}"')),
    )


def public_error(x: BaseException, *roots: str) -> str:
    """An exception as an answer may show it: an ``OSError`` by its reason alone (its file name
    is an absolute path of the serving machine), anything else with ``roots`` (the store's
    absolute paths) cut out."""
    if isinstance(x, OSError) and x.strerror:
        return f"{type(x).__name__}: {x.strerror}"
    text = f"{type(x).__name__}: {x}"
    for root in roots:
        if root:
            text = text.replace(root, "<store>")
    return text[:300]
