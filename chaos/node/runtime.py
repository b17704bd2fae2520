"""What every node-side service shares: its identity, the event log, and fault hooks.

Fault hooks are files in a control folder that only the orchestrator can write (a bind mount,
not reachable through any service API), so a student's protocol or a client can never switch a
fault on. Two kinds:

- ``arm`` files: ``<control>/<node>/<point>`` — a one-shot fault point (``relay-crash-before-publish``).
  The first process to reach the point claims the file by renaming it (atomic: exactly one claims
  it) and the fault fires. Where nodes hold copies instead of one shared folder, a claim of a
  point armed for any node is also granted by the orchestrator (``ARBITER_ENV`` below).
- ``hold`` files: ``<control>/<node>/hold-<component>-<kind>`` — when the service is about to
  report event ``kind``, it claims the file, reports a ``fault-point`` event, and waits until the
  orchestrator writes ``<same name>.release``. The orchestrator stops the process in between, so a
  fault lands at an exact point of the protocol instead of by luck.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CRASH_EXIT_CODE = 17


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    node: str
    component: str


class EventLog:
    """Appends events as JSON lines stamped with CLOCK_MONOTONIC (``mono``).

    Containers on one host share the monotonic clock, so the orchestrator can place these events on
    the same time axis as its ops by subtracting its own origin.
    """

    def __init__(self, path: Path, ident: Identity) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self._lock = threading.Lock()
        self._ident = ident
        self._pid = os.getpid()

    def emit(
        self,
        kind: str,
        *,
        task_id: str | None = None,
        event_id: str | None = None,
        at: float | None = None,
        **data: Any,
    ) -> None:
        """Append one event. ``at`` back-dates it to a CLOCK_MONOTONIC instant taken earlier (a
        publish is reported when its ACK says where it landed, but it happened when it was sent)."""
        rec: dict[str, Any] = {
            "mono": time.monotonic() if at is None else at,
            "wall": time.time(),
            "node": self._ident.node,
            "component": self._ident.component,
            "kind": kind,
            "pid": self._pid,
        }
        if task_id is not None:
            rec["task_id"] = task_id
        if event_id is not None:
            rec["event_id"] = event_id
        if data:
            rec["data"] = data
        line = json.dumps(rec, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()


class Hooks:
    """The fault hooks of one service process (see the module docstring)."""

    def __init__(self, control: Path | None, ident: Identity, events: EventLog) -> None:
        # a node's own folder first, then "any": a point armed for any node is claimed by whichever
        # process reaches it first (rename is atomic across containers: one host folder)
        self._dirs = [control / ident.node, control / "any"] if control else []
        self._ident = ident
        self._events = events

    def _claim(self, name: str) -> dict[str, Any] | None:
        for d in self._dirs:
            src = d / name
            if not src.exists():
                continue
            dst = d / f"{name}.claimed-{os.getpid()}-{time.monotonic_ns()}"
            try:
                os.rename(src, dst)
            except FileNotFoundError:
                continue  # another process claimed it first
            if d.name == "any" and os.environ.get(ARBITER_ENV) and not _granted(dst):
                continue  # a copy on another node was claimed first (see ARBITER_ENV)
            try:
                spec = dict(json.loads(dst.read_text() or "{}"))
            except ValueError:
                spec = {}
            spec["_dir"] = str(d)
            return spec
        return None

    def armed(self, point: str, *, task_id: str | None = None, event_id: str | None = None) -> bool:
        """True once for a fault point the orchestrator armed; reports a ``fault-point`` event."""
        spec = self._claim(point)
        if spec is None:
            return False
        self._events.emit("fault-point", task_id=task_id, event_id=event_id, point=point)
        return True

    def crash_if_armed(
        self, point: str, *, task_id: str | None = None, event_id: str | None = None
    ) -> None:
        if self.armed(point, task_id=task_id, event_id=event_id):
            self._events.emit("crash", task_id=task_id, event_id=event_id, fault=point)
            sys.stdout.flush()
            os._exit(CRASH_EXIT_CODE)

    def hold(self, kind: str, *, task_id: str | None = None, event_id: str | None = None) -> None:
        """Wait here if the orchestrator asked to stop this process at event ``kind``."""
        name = f"hold-{self._ident.component}-{kind}"
        spec = self._claim(name)
        if spec is None:
            return
        self._events.emit("fault-point", task_id=task_id, event_id=event_id, point=name, hold=True)
        release = Path(spec["_dir"]) / f"{name}.release"
        deadline = time.monotonic() + float(spec.get("timeout", 30.0))
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        with contextlib.suppress(FileNotFoundError):
            release.unlink()


# Set when the nodes do not share one control folder (the SSH backend copies points armed for any
# node to every node): a local rename is then atomic on this node only, so a claim of an "any"
# point waits for the orchestrator to grant it (``<claimed>.granted``) to exactly one claimer and
# deny it (``<claimed>.denied``) to the others. No answer within GRANT_TIMEOUT counts as denied.
ARBITER_ENV = "CHAOS_CONTROL_ARBITER"
GRANT_TIMEOUT = 10.0


def _granted(claimed: Path) -> bool:
    granted = claimed.with_name(claimed.name + ".granted")
    denied = claimed.with_name(claimed.name + ".denied")
    deadline = time.monotonic() + GRANT_TIMEOUT
    while time.monotonic() < deadline:
        if granted.exists():
            return True
        if denied.exists():
            return False
        time.sleep(0.005)
    return False


def env(name: str, default: str | None = None) -> str:
    v = os.environ.get(name, default)
    if v is None:
        raise SystemExit(f"environment variable {name} is required")
    return v
