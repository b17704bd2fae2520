"""How a value stored in etcd is read, once for every reader: the final reads and the replay of
etcd's record (:mod:`chaos.workloads.systems.etcd_record`) decode with :func:`decode`, and every
integer a checker judges (lab3's counter, lab1's balances and tokens) goes through :func:`as_int`.

One reading, because two readings are a hole: a counter stored as ``+10`` was ``10`` to the final
read's ``int()`` and "not a number" to the replay, so the replay skipped the writes the final read
counted. Here a value is an integer only when its bytes are a canonical JSON integer — what
``json.dumps`` writes for a Python ``int`` — and anything else (``+10``, `` 10``, ``1e1``, ``10.0``,
``true``, ``0x0a``, ``"10"``, a value too long to keep) is refused by every reader alike, and the
refusal is named in the verdict. Pure: no etcd client here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chaos.histories.limits import UNREAD, VALUE_DEPTH, load_value

# a value longer than this is kept as its length only: the record is evidence, not a backup
MAX_VALUE = 4096
TRUNCATED = "chaos_truncated_bytes"
__all__ = ["MAX_EVENTS", "MAX_VALUE", "TRUNCATED", "UNREAD", "VALUE_DEPTH", "Finding", "as_int",
           "decode", "describe", "int_problem", "unread", "unusable"]  # fmt: skip
# a run that wrote more than this many events under the prefix is cut (and says so)
MAX_EVENTS = 500_000


def decode(raw: bytes | None) -> Any:
    """A stored value as JSON data: ``None`` for no value, ``{"chaos_truncated_bytes": n}`` for one
    longer than :data:`MAX_VALUE`, ``{"chaos_unread": why}`` for one nested deeper than
    :data:`VALUE_DEPTH`, the decoded JSON when the bytes are JSON, else the text.

    A number whose bytes are not the canonical form of what they decode to (`` 10``, ``1e1``,
    ``10.00``) stays text: decoding it would make ``int()``-lenient and strict readers agree on a
    value the store never held in that form."""
    if raw is None:
        return None
    if len(raw) > MAX_VALUE:
        return {TRUNCATED: len(raw)}
    text = raw.decode("utf-8", errors="replace")
    try:
        value = load_value(text)
    except ValueError:  # also a number too long to convert
        return text
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and json.dumps(value) != text:
        return text
    return value


def as_int(value: Any) -> int | None:
    """The integer a decoded value holds, or None when it is not one (bools, floats and strings
    are not)."""
    return value if type(value) is int else None


def unread(value: Any) -> str | None:
    """Why :func:`decode` kept a value as a marker instead of its content, or None."""
    if isinstance(value, dict) and len(value) == 1:
        if isinstance(value.get(TRUNCATED), int):
            return "too long to read"
        if isinstance(value.get(UNREAD), str):
            return "too deep to read"
    return None


def describe(value: Any) -> str:
    """A stored value in a sentence: ``'+10'``, ``10.0``, ``a 5000-byte value (not kept)``."""
    if isinstance(value, dict) and set(value) == {TRUNCATED}:
        return f"a {value[TRUNCATED]}-byte value (longer than {MAX_VALUE} bytes, not kept)"
    if isinstance(value, dict) and set(value) == {UNREAD}:
        return f"a value {str(value[UNREAD])[:80]} (not kept)"
    if isinstance(value, str):
        return repr(value[:80] + ("…" if len(value) > 80 else ""))
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:80] + "…"


def int_problem(value: Any) -> str | None:
    """Why a decoded value is not an integer, or None when it is one."""
    if as_int(value) is not None:
        return None
    if value is None:
        return "no value"
    if isinstance(value, bool):
        return "a boolean, not an integer"
    if isinstance(value, float):
        return "a float, not an integer"
    if isinstance(value, str):
        return "not a JSON integer"
    marker = unread(value)
    if marker is not None:
        return marker
    return f"a JSON {type(value).__name__}, not an integer"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One revision of a lab's record that no rule of the lab explains: the write, and why."""

    revision: int
    key: str
    kind: str  # unreadable | deleted | foreign-key | shape | unexplained-change | ...
    why: str  # a sentence that starts with "rev N"

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "key": self.key, "kind": self.kind, "why": self.why}


def unusable(record: Any) -> str | None:
    """Why a stored record cannot account for a run (missing, failed, cut, unanchored), in words,
    or None when it can."""
    if not isinstance(record, dict):
        return "the run has no etcd record (it ended before its final reads, or predates them)"
    if record.get("error"):
        return f"etcd's record of the run could not be read: {record['error']}"
    if record.get("truncated"):
        why = record.get("truncated_why") or f"{MAX_EVENTS} events"
        return (
            f"etcd's record of the run was cut after {why} under "
            f"{record.get('prefix')}: the writes after the cut cannot be accounted for"
        )
    if not isinstance(record.get("from_revision"), int) or not isinstance(record.get("txns"), list):
        return "etcd's record of the run does not say which revision it starts from"
    return None
