"""A crash the host makes and sees: SIGKILL a named process by the pid the host knows, watch it
exit, then restart it.

What a fault point's crash rests on. The code under test can say it crashed, write any pid in an
event, even exit by itself at the right moment; none of that is this record. Here every field is
the host's own observation: the pid is the one the node's root shell wrote when it started the
process (``Cluster.pid``), the signal is the orchestrator's, the exit is the process gone from the
host's ``/proc``, and the restarted pid is the supervisor's new process.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from chaos.core.context import RunContext

EXIT_WAIT = 5.0
RESTART_WAIT = 15.0
# a process in these states is not running: it exited already (zombie, dead)
GONE = frozenset({"Z", "X", "x"})


def crash(ctx: RunContext, node: str, name: str, pid: int) -> dict[str, Any]:
    """SIGKILL ``name`` on ``node`` if it still runs as ``pid``, wait for its exit, restart it.

    Returns the facts: ``killed_pid``, ``signalled_at`` and ``exit_seen_at`` (run seconds) and
    ``restarted_pid`` when each happened, ``error`` in words when something did not. A process that
    is no longer ``pid`` (it exited by itself, or was never that pid) is not signalled: its exit is
    not the host's doing. Must not raise; the supervisor is released (so the process restarts)
    whatever happens.
    """
    out: dict[str, Any] = {"killed_pid": pid, "signal": "SIGKILL"}
    # hold: the restart is made here, after the exit was seen, not by the supervisor's own loop
    ctx.supervisor.hold(node, name)
    try:
        _kill(ctx, node, name, pid, out)
    except Exception as e:  # the node may be gone; the facts so far stand
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        try:
            ctx.supervisor.release(node, name)
        except Exception as e:  # a frozen node: the supervisor's loop restarts it later
            out.setdefault("error", f"restart failed: {type(e).__name__}: {e}")
    deadline = time.monotonic() + RESTART_WAIT
    while time.monotonic() < deadline and not ctx.stop.is_set():
        new = ctx.cluster.pid(node, name)
        if new is not None and new != pid:
            out["restarted_pid"] = new
            break
        time.sleep(0.02)
    return out


def _kill(ctx: RunContext, node: str, name: str, pid: int, out: dict[str, Any]) -> None:
    running, state = ctx.cluster.pid(node, name), ctx.cluster.process_state(node, name)
    if running != pid or state is None or state in GONE:
        out["error"] = (
            f"{name} on {node} was not running as pid {pid} when the host went to kill it "
            f"(the host saw pid {running}, state {state}): it was not the host's crash"
        )
        return
    sent = ctx.cluster.signal(node, name, signal.SIGKILL)
    if sent != pid:
        out["error"] = f"the host's SIGKILL did not reach {name} on {node} as pid {pid}"
        return
    out["signalled_at"] = round(ctx.now(), 3)
    deadline = time.monotonic() + EXIT_WAIT
    while ctx.cluster.pid(node, name) is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    if ctx.cluster.pid(node, name) is not None:
        out["error"] = f"{name} on {node} (pid {pid}) survived SIGKILL for {EXIT_WAIT:.0f} s"
        return
    out["exit_seen_at"] = round(ctx.now(), 3)
