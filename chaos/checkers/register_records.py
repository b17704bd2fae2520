"""The register models' ops as search records in one pass, without a call per op.

:func:`chaos.checkers.linearizable._records` turns each paired op into a record through the
model's ``encode`` and ``read_only`` (two calls an op; at 100k ops over 1,000 keys those calls
and their unpacking were ~0.04 s of a ~0.8 s ``chaos check``). For the register models, whose
encoding is a handful of cases (:func:`chaos.checkers.models._register_encode`), this module
does the same work inline, for Jepsen's independent ``[key value]`` tuples only.

It is the plain path's twin, not a second opinion: it yields exactly the records the plain path
yields (``tests/unit/test_register_records.py`` compares both, and the verdicts, on random
histories), and it gives up (None) on anything outside its cases — an ``f`` the model does not
know, a cas whose value is not a pair — so that the plain path raises the error naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos.checkers.models import CAS, READ, UNKNOWN, WRITE, RegisterSpec, freeze
from chaos.histories.ops import Op, OpType

__all__ = ["register_records"]

_CODES = {"read": READ, "get": READ, "write": WRITE, "put": WRITE, "cas": CAS}
_READ_INPUT = (READ, None, None)  # the models' one shared read input (models._READ_INPUT)


def register_records(
    spec: RegisterSpec,
    invokes: Sequence[Op],
    completions: Sequence[Op | None],
    invoke_at: Sequence[int],
    completion_at: Sequence[int],
    never: int,
) -> tuple[dict[Any, list[tuple[Any, ...]]], int] | None:
    """The records and the dropped ops' count, as ``_records(..., independent=True)`` makes them
    for a register model with ``spec`` (every invoke a ``[key value]`` pair: ``prepare`` checked);
    None when an op is outside the cases here."""
    codes = _CODES if spec.with_cas else {f: c for f, c in _CODES.items() if c != CAS}
    nil_is_any = spec.nil_read == "any"
    fail_observed = spec.failed_cas == "observed"
    ok, fail, unknown, read_input = OpType.OK, OpType.FAIL, UNKNOWN, _READ_INPUT
    records: dict[Any, list[tuple[Any, ...]]] = {}
    dropped = 0
    rec: tuple[Any, ...]
    for inv, comp, ipos, cpos in zip(invokes, completions, invoke_at, completion_at, strict=True):
        code = codes.get(inv.f)
        if code is None:
            return None  # the plain path names the op the model does not know
        typ = None if comp is None else comp.type
        if typ is fail and comp is not None and comp.error is not None:
            dropped += 1  # failed with an error: it did not run, observed nothing
            continue
        key, v_in = inv.value
        if code == READ:
            if typ is not ok or comp is None:  # a failed read did not happen; an unfinished
                dropped += 1  # one tells nothing
                continue
            v_out = comp.value
            if v_out.__class__ in (list, tuple) and len(v_out) == 2:
                v_out = v_out[1]
            if v_out is None and nil_is_any:
                dropped += 1  # Knossos' nil read matches every state: the same as no read
                continue
            out: Any = v_out if v_out.__class__ is int or v_out is None else freeze(v_out)
            rec = (read_input, out, True, True, inv, comp, ipos, cpos)
        elif code == WRITE:
            if typ is fail:
                dropped += 1
                continue
            det = typ is ok
            v = v_in if v_in.__class__ is int else freeze(v_in)
            rec = ((WRITE, v, None), None if det else unknown, det, False, inv, comp, ipos,
                   cpos if det else never)  # fmt: skip
        else:
            if typ is fail and not fail_observed:
                dropped += 1
                continue
            if v_in.__class__ not in (list, tuple) or len(v_in) != 2:
                return None  # the plain path says what a cas value must be
            rec = _cas_record(v_in, typ, inv, comp, ipos, cpos, never)
        if key.__class__ is not int:
            key = freeze(key)
        recs = records.get(key)
        (records.setdefault(key, []) if recs is None else recs).append(rec)
    return records, dropped


def _cas_record(
    v_in: Sequence[Any],
    typ: OpType | None,
    inv: Op,
    comp: Op | None,
    ipos: int,
    cpos: int,
    never: int,
) -> tuple[Any, ...]:
    """A cas's record (a call of its own: cas ops are the fewest, reads and writes stay inline)."""
    a, b = v_in
    out = True if typ is OpType.OK else False if typ is OpType.FAIL else UNKNOWN
    det = out is not UNKNOWN
    inp = (CAS, a if a.__class__ is int else freeze(a), b if b.__class__ is int else freeze(b))
    return (inp, out, det, out is False, inv, comp, ipos, cpos if det else never)
