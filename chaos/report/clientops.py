"""Client operations as intervals: an invoke joined to its completion.

An invoke that never completed is kept, as ``info`` ending at the end of the run: Jepsen reads it
as "maybe happened", and hiding it would hide the ops a crash or a partition left hanging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos.histories.ops import Op, OpType, pair_index


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

    @property
    def latency(self) -> float:
        return self.end - self.start


def client_ops(history: list[Op], end_time: float) -> list[ClientOp]:
    pairs = pair_index(history)
    out: list[ClientOp] = []
    for pos, op in enumerate(history):
        if op.is_nemesis or op.type is not OpType.INVOKE:
            continue
        comp = history[pairs[pos]] if pos in pairs else None
        node = (comp.extra.get("node") if comp else None) or op.extra.get("node")
        out.append(
            ClientOp(
                index=op.index,
                process=op.process,
                f=op.f,
                type=comp.type.value if comp else "info",
                start=op.time,
                end=comp.time if comp else max(end_time, op.time),
                completed=comp is not None,
                value=op.value,
                result=comp.value if comp else None,
                error=(comp.error if comp else "no completion recorded"),
                node=str(node) if node is not None else None,
            )
        )
    return out
