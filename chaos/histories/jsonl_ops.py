"""Reading a chaos ``history.jsonl`` into ops at msgspec speed, for checking it.

:func:`chaos.histories.jsonl.read_history` parses line by line (``json.loads`` and
``Op.from_json``), which is what a run's writer and its readers need: forgiving, with a message
for every bad line. Checking a long history offline wants speed: :func:`read_ops` decodes blocks
of lines with msgspec straight into :class:`~chaos.histories.ops.Op` records, about four times faster.

It answers only for files whose every line is a plain op line — Jepsen's seven fields with their
usual types and nothing else (extra fields must go to ``Op.extra``, which the typed decode would
drop). Each block is first validated against a record that refuses unknown fields; the first
block that fails, a header it does not accept or a last line without a newline send the whole
file to ``read_history``, so the result is always the same as its, problems and line numbers
included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import msgspec

from chaos.histories.jsonl import FORMAT_VERSION, HISTORY_FORMAT, LineProblem, read_history
from chaos.histories.ops import Op

__all__ = ["read_ops"]

_BLOCK = 2 << 20


class _Plain(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """What a plain op line holds; anything else (an extra field, an odd type) is not plain."""

    index: int
    time: float
    process: int | str
    type: Literal["invoke", "ok", "fail", "info"]
    f: str
    value: Any = None
    error: str | None = None


_CHECK = msgspec.json.Decoder(_Plain)
_OPS = msgspec.json.Decoder(Op)


def _plain_header(line: bytes) -> bool:
    try:
        d = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(d, dict)
        and set(d) == {"format", "version"}
        and d["format"] == HISTORY_FORMAT
        and type(d["version"]) is int
        and d["version"] <= FORMAT_VERSION
    )


def _fallback(path: Path) -> tuple[list[Op], list[LineProblem]]:
    loaded = read_history(path)
    return loaded.records, loaded.problems


def read_ops(path: Path) -> tuple[list[Op], list[LineProblem]]:
    """The ops of ``history.jsonl`` and the lines that could not be read, exactly as
    :func:`chaos.histories.jsonl.read_history` gives them, only faster on plain files."""
    ops: list[Op] = []
    with open(path, "rb") as fh:
        tail = fh.readline()
        if b'"format"' in tail:
            if not tail.endswith(b"\n") or not _plain_header(tail):
                return _fallback(path)
            tail = b""
        while True:
            chunk = fh.read(_BLOCK)
            buf = tail + chunk
            cut = buf.rfind(b"\n") + 1 if chunk else len(buf)
            block, tail = buf[:cut], buf[cut:]
            if block:
                if not block.endswith(b"\n") and block.strip():
                    return _fallback(path)  # a last line without newline: maybe truncated
                try:
                    _CHECK.decode_lines(block)
                    ops += _OPS.decode_lines(block)
                except msgspec.DecodeError:  # ValidationError included
                    return _fallback(path)
            if not chunk:
                return ops, []
