"""Client operations as intervals: an invoke joined to its completion.

An invoke that never completed is kept, as ``info`` ending at the end of the run: Jepsen reads it
as "maybe happened", and hiding it would hide the ops a crash or a partition left hanging.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chaos.histories.ops import NEMESIS, OpLike


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientOp:
    index: int
    process: int | str
    f: str
    type: str  # ok | fail | info; "info" also for an invoke with no completion
    start: float
    end: float
    completed: bool
    value: Any
    result: Any
    error: str | None
    node: str | None
    # the earlier attempts of a retried op (lab3's create: where each went and what it got), as
    # the completion's ``retried`` lists them; ``node`` is the attempt that answered
    retried: tuple[dict[str, Any], ...] = ()

    @property
    def latency(self) -> float:
        return self.end - self.start


def pair_positions(history: Sequence[OpLike]) -> dict[int, int]:
    """Invoke position → completion position, Jepsen's pairing by process (as
    ``chaos.histories.ops.pair_index``, for ops read as :class:`OpLike`)."""
    open_by_process: dict[int | str, int] = {}
    pairs: dict[int, int] = {}
    for pos, op in enumerate(history):
        if op.type == "invoke":
            open_by_process[op.process] = pos
        else:
            inv = open_by_process.pop(op.process, None)
            if inv is not None:
                pairs[inv] = pos
    return pairs


def client_ops(history: Sequence[OpLike], end_time: float) -> list[ClientOp]:
    pairs = pair_positions(history)
    out: list[ClientOp] = []
    for pos, op in enumerate(history):
        if op.type != "invoke" or op.process == NEMESIS:
            continue
        c = pairs.get(pos)
        comp = history[c] if c is not None else None
        node = (comp.extra.get("node") if comp else None) or op.extra.get("node")
        out.append(
            ClientOp(
                index=op.index,
                process=op.process,
                f=op.f,
                type=str(comp.type) if comp else "info",
                start=op.time,
                end=comp.time if comp else max(end_time, op.time),
                completed=comp is not None,
                value=op.value,
                result=comp.value if comp else None,
                error=(comp.error if comp else "no completion recorded"),
                node=str(node) if node is not None else None,
                retried=_retried(comp.extra.get("retried") if comp else None),
            )
        )
    return out


def _retried(v: Any) -> tuple[dict[str, Any], ...]:
    return tuple(a for a in v if isinstance(a, dict)) if isinstance(v, list) else ()
