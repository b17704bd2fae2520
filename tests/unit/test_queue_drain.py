"""jetstream-queue's drain waits out the AckWait before it calls the queue empty: a message whose
ACK was lost during the run (an ``info`` dequeue) comes back only then, and a drain that stopped
after two empty answers (about 1 s) made total-queue call it lost."""

from __future__ import annotations

import time
import types
from typing import Any

from chaos.core.spec import TestSpec
from chaos.histories.ops import OpType
from chaos.workloads.jetstream_queue import JetStreamQueue


def _drain(comes_back_after: float, ack_wait: float) -> tuple[list[Any], float]:
    ops: list[Any] = []
    t0 = time.monotonic()
    sent = [False]

    def op(self: Any, ctx: Any, clients: Any, process: int, f: str, value: Any) -> None:
        time.sleep(0.05)  # a fetch that finds nothing takes a while
        if not sent[0] and time.monotonic() - t0 >= comes_back_after:
            sent[0] = True
            ops.append(types.SimpleNamespace(type=OpType.OK, value=7))
        else:
            ops.append(types.SimpleNamespace(type=OpType.FAIL, value=None))

    wl = JetStreamQueue()
    spec = TestSpec(workload=wl.name, options={"ack_wait": ack_wait})
    ctx: Any = types.SimpleNamespace(spec=spec, history=types.SimpleNamespace(ops=ops))
    wl._op = types.MethodType(op, wl)  # type: ignore[method-assign]
    assert wl.final_state(ctx)["drained"] == sum(o.type is OpType.OK for o in ops)
    return [o for o in ops if o.type is OpType.OK], time.monotonic() - t0


def test_a_message_back_after_the_ack_wait_is_drained() -> None:
    ok, took = _drain(comes_back_after=1.2, ack_wait=1.0)
    assert [o.value for o in ok] == [7], "the redelivered message was read"
    # and then it waited the AckWait (+1 s) again without a message before it stopped
    assert took >= 1.2 + 2.0, took


def test_an_empty_queue_is_drained_in_about_the_ack_wait() -> None:
    ok, took = _drain(comes_back_after=1e9, ack_wait=0.5)
    assert ok == [] and 1.5 <= took < 10, took
