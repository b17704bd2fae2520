"""A linear pass that decides the cheap non-linearizable register histories before the search.

The search (:mod:`chaos.checkers.linearizable`) can take exponential time to give up on a history
whose fault is plain: a read of a value nothing wrote. Knossos and Porcupine both search such a
history to the end (or to their limit: a 60 s "unknown"). For the register models one pass over a
key's ops finds two kinds of op no linearization can place, each proven wrong by itself:

* an op that **observed a value never written**: a determinate read of ``v``, or a cas that
  succeeded comparing against ``v``, where ``v`` is not the initial value and no write or cas of
  the key could have put ``v`` there;
* an op that **observed a value before any write of it began**: every op that could have written
  ``v`` was invoked after this op had returned, so each of them takes effect after it.

"Could have written" respects the models' meaning of each op (:mod:`chaos.checkers.models`): a
write that completed ``ok`` or is indeterminate (``info``, never completed: it may have happened,
any time after its invoke) counts; a ``fail`` write did not happen and the model's encoding has
already dropped it; a cas writes its new value unless it is known to have failed its compare
(output ``False``); an indeterminate read observed nothing and was dropped before this pass.
Anything this pass does not find is left to the search, which stays the judge of the rest.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import count
from typing import Any

from chaos.checkers.models import CAS, READ, UNKNOWN, WRITE, Model

__all__ = ["REGISTER_MODELS", "Found", "precheck_register"]

REGISTER_MODELS = ("register", "cas-register")
_NEVER = float("inf")

# (op id in the partition, why: "never-written" or "read-before-write", the value observed)
Found = tuple[int, str, Any]


def precheck_register(
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    events: Sequence[int],
    model: Model,
) -> Found | None:
    """The first op (in history order of its return) that observed a value it cannot have
    seen, or None. ``inputs``/``outputs``/``events`` are one key's, as the search takes them
    (``events``: ``2*i`` is op ``i``'s call, ``2*i+1`` its return; indeterminate ops have none)."""
    n = len(inputs)
    place: list[float] = [_NEVER] * (2 * n)
    deque(map(place.__setitem__, events, count()), maxlen=0)  # place[node] = k, in C
    init = model.init
    first_write: dict[Any, float] = {}  # value -> earliest call of an op that may write it
    get = first_write.get
    for inp, out, at in zip(inputs, outputs, place[0::2], strict=True):
        code = inp[0]
        if code == READ:
            continue
        if code == WRITE:
            v = inp[1]
        elif out is not False:
            v = inp[2]
        else:
            continue
        if at < get(v, _NEVER):
            first_write[v] = at
    found: Found | None = None
    found_at = _NEVER
    unknown = UNKNOWN
    for i, (inp, out, ret) in enumerate(zip(inputs, outputs, place[1::2], strict=True)):
        code = inp[0]
        if code == READ:
            if out is unknown:
                continue
            v = out
        elif code == CAS and out is True:
            v = inp[1]
        else:
            continue
        if v == init or ret >= found_at:
            continue
        w = get(v)
        if w is None:
            found, found_at = (i, "never-written", v), ret
        elif w > ret:
            found, found_at = (i, "read-before-write", v), ret
    return found
