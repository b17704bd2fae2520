"""What the generic (non-lab) workloads share: a rate-limited pool of client processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from chaos.core.context import RunContext


def drive(ctx: RunContext, step: Callable[[int], None], *, default_rate: float) -> None:
    """Call ``step(process)`` from ``ctx.spec.concurrency`` threads, at ``--rate`` ops/s in total,
    until ``--time-limit`` passes, ``--tasks`` ops have started, or the run stops."""
    spec = ctx.spec
    rate = spec.rate or default_rate
    interval = 1.0 / rate if rate > 0 else 0.0
    deadline = time.monotonic() + spec.time_limit
    budget = [spec.tasks if spec.tasks is not None else 10**12]
    lock = threading.Lock()
    next_at = [time.monotonic()]

    def ticket() -> bool:
        with lock:
            if ctx.stop.is_set() or time.monotonic() >= deadline or budget[0] <= 0:
                return False
            budget[0] -= 1
            wait = next_at[0] - time.monotonic()
            next_at[0] = max(next_at[0], time.monotonic()) + interval
        if wait > 0:
            time.sleep(wait)
        return True

    def loop(process: int) -> None:
        while ticket():
            step(process)

    threads = [
        threading.Thread(target=loop, args=(p,), name=f"client-{p}", daemon=True)
        for p in range(max(1, spec.concurrency))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def classify(e: BaseException) -> str:
    """A client error as Jepsen clients report it: ``timeout`` or ``unavailable`` for what faults
    are expected to cause, the exception itself otherwise (the exceptions checker flags those)."""
    name = type(e).__name__
    text = f"{name}: {e}"[:200]
    low = text.lower()
    if "timeout" in low or "timed out" in low or "deadline" in low:
        return f"timeout ({text})"
    if any(w in low for w in ("connectionfailed", "connection refused", "noservers", "unavailable",
                              "connectionclosed", "connection reset", "no servers")):  # fmt: skip
        return f"unavailable ({text})"
    return text
