"""What every node-side service shares: its identity, the event log, and fault hooks.

Fault hooks are files in a control folder that only the orchestrator can write (the services run
as an unprivileged user that may read it, not write it, and no service API reaches it), so a
student's protocol or a client can never switch a fault on. Two kinds:

- ``arm`` files: ``<control>/<node>/<point>`` — a one-shot fault point (``relay-crash-before-publish``).
  The arm file carries a generation ``gen``; the first process to reach the point asks for that
  arming by creating ``<claims>/<folder>-<point>.<gen>`` with O_EXCL (exactly one process succeeds, on any
  node: the claims folder is one shared folder) and waits for the orchestrator's answer,
  ``<control>/<folder>/<point>.answer`` (root-owned: the service cannot write it). The answer
  grants the arming to the claimer's pid, which the orchestrator checked against the process it
  runs, or denies it. The claim is only a request: anything in the process (a hostile solution
  thread too) can make one, so the orchestrator takes no fact about the fault from it. A crashing
  point never exits by itself: the granted process waits there, and the orchestrator SIGKILLs it
  by the pid it knows and watches it exit. Where nodes hold copies instead of one shared folder
  (the SSH backend, ``ARBITER_ENV`` set), a process claims its node's copy by renaming it, and a
  claim of a point armed for any node also waits for the arbiter's grant, given to exactly one
  claimer.
- ``hold`` files: ``<control>/<node>/hold-<component>-<kind>`` — when the service is about to
  report event ``kind``, it claims the arming the same way, reports a ``fault-point`` event, and
  waits until the orchestrator writes ``<same name>.release`` for that generation; then it creates
  ``<claims>/<folder>-<name>.<gen>.released``. The orchestrator stops the process in between, so a fault
  lands at an exact point of the protocol instead of by luck.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, SupportsIndex

# how long a claimer waits for the orchestrator's answer before it goes on as if not armed
ANSWER_TIMEOUT = 10.0
# how long a process granted a crashing point waits there for the orchestrator's SIGKILL before
# it goes on (the orchestrator failed to kill it: nothing crashed, and the run says so)
KILL_WAIT = 30.0
_EXCL = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def _sleep(secs: float | SupportsIndex, /) -> None:
    """``time.sleep`` through a semaphore wait on CLOCK_MONOTONIC (what ``Event.wait`` uses)."""
    seconds = secs if isinstance(secs, float) else float(operator.index(secs))
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    threading.Event().wait(seconds)


# Under libfaketime (a run with clock faults preloads it, see chaos.cluster.clocks) Python 3.11's
# time.sleep fails with EINVAL: it calls clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), which
# libfaketime 0.9.10 mangles when it leaves the monotonic clock true. Every service imports this
# module first, so the replacement covers the service, the solution and the client libraries.
if "libfaketime" in os.environ.get("LD_PRELOAD", ""):
    time.sleep = _sleep


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

    def __init__(
        self, control: Path | None, ident: Identity, events: EventLog, claims: Path | None = None
    ) -> None:
        # a node's own folder first, then "any": a point armed for any node is claimed by whichever
        # process reaches it first
        self._dirs = [control / ident.node, control / "any"] if control else []
        self._claims = (
            claims if claims is not None else (control.parent / "claims" if control else None)
        )
        self._ident = ident
        self._events = events

    def _claim(self, name: str) -> dict[str, Any] | None:
        if os.environ.get(ARBITER_ENV):
            return self._claim_copy(name)
        return self._claim_shared(name)

    def _claim_copy(self, name: str) -> dict[str, Any] | None:
        """Claim this node's copy of an armed point by renaming it (the SSH backend's nodes:
        the folder is the node's own, written by the orchestrator over SSH)."""
        for d in self._dirs:
            src = d / name
            if not src.exists():
                continue
            dst = d / f"{name}.claimed-{os.getpid()}-{time.monotonic_ns()}"
            try:
                os.rename(src, dst)
            except OSError:
                continue  # another process claimed it first
            if d.name == "any" and not _granted(dst):
                continue  # a copy on another node was claimed first
            try:
                spec = dict(json.loads(dst.read_text() or "{}"))
            except ValueError:
                spec = {}
            spec["_dir"] = str(d)
            spec["_gen"] = str(spec.get("gen", "0"))
            return spec
        return None

    def _claim_shared(self, name: str) -> dict[str, Any] | None:
        """Claim an armed point: read its arm file (the orchestrator's; read-only here) and create
        ``claims/<name>.<gen>`` exclusively — O_EXCL on one shared folder, so exactly one process
        claims each arming, on whichever node."""
        if self._claims is None:
            return None
        for d in self._dirs:
            try:
                raw = (d / name).read_text()
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            try:
                spec = dict(json.loads(raw or "{}"))
            except ValueError:
                spec = {}
            gen = str(spec.get("gen", "0"))
            # one claim per arming of one folder: a point armed for "any" node is claimed once
            # across the cluster, one armed for n2 once on n2
            claim = self._claims / f"{d.name}-{name}.{gen}"
            try:
                fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                continue  # another process claimed this arming first
            except OSError:
                continue
            with os.fdopen(fd, "w") as fh:
                # a request in the claimer's own words: the orchestrator checks the pid against
                # the process it runs there before it answers
                fh.write(json.dumps({"node": self._ident.node, "component": self._ident.component,
                                     "pid": os.getpid()}))  # fmt: skip
            spec["_dir"] = str(d)
            spec["_gen"] = gen
            spec["_claim"] = str(claim)
            return spec
        return None

    def armed(self, point: str, *, task_id: str | None = None, event_id: str | None = None) -> bool:
        """True once for a fault point the orchestrator armed and granted to this process (see the
        module docstring); reports a ``fault-point`` event, narration only."""
        spec = self._claim(point)
        if spec is None:
            return False
        self._events.emit("fault-point", task_id=task_id, event_id=event_id, point=point)
        return self._granted(point, spec, ANSWER_TIMEOUT)

    def _granted(
        self,
        name: str,
        spec: dict[str, Any],
        timeout: float,
        keepalive: Callable[[], None] | None = None,
    ) -> bool:
        """Wait for the orchestrator's answer to this claim: granted to this very process, or not
        (denied, answered for another pid, or no answer within ``timeout``). Taking an answer is
        said in ``<claim>.answered``, so that the orchestrator keeps it until it was read."""
        answer = Path(spec["_dir"]) / f"{name}.answer"
        deadline = time.monotonic() + timeout
        alive = _Keepalive(keepalive)
        while time.monotonic() < deadline:
            alive.tick()
            try:
                got = json.loads(answer.read_text() or "{}")
            except (OSError, ValueError):
                got = None
            if isinstance(got, dict) and str(got.get("gen")) == spec["_gen"]:
                if "_claim" in spec:
                    with contextlib.suppress(OSError):
                        os.close(os.open(f"{spec['_claim']}.answered", _EXCL, 0o644))
                return got.get("granted") is True and got.get("pid") == os.getpid()
            time.sleep(0.005)
        return False

    def txn_event(
        self, fn: str, n: int, ok: bool, task_id: str | None, rev: int | None = None
    ) -> None:
        """One transaction of the solution's ``fn`` returned (see chaos.node.store); ``rev`` is
        the etcd revision it wrote, when it wrote anything."""
        extra: dict[str, Any] = {"rev": rev} if rev is not None else {}
        self._events.emit("txn", task_id=task_id, fn=fn, n=n, ok=ok, **extra)

    def stop_for_crash_if_armed(
        self,
        point: str,
        *,
        task_id: str | None = None,
        event_id: str | None = None,
        keepalive: Callable[[], None] | None = None,
    ) -> None:
        """A crashing point: once granted, stop here until the orchestrator's SIGKILL ends this
        process. The service never exits by itself (the crash is the host's to make and to see);
        it waits for the answer and then the kill, ``KILL_WAIT`` at most (the orchestrator reads
        the state first), and goes on if neither comes: then nothing crashed. ``keepalive`` is
        called every ``KEEPALIVE_EVERY`` while it waits (the worker tells the broker its delivery
        is in progress, so that it is not redelivered elsewhere before the kill)."""
        spec = self._claim(point)
        if spec is None:
            return
        self._events.emit("fault-point", task_id=task_id, event_id=event_id, point=point)
        if self._granted(point, spec, KILL_WAIT, keepalive):
            sys.stdout.flush()
            alive = _Keepalive(keepalive)
            deadline = time.monotonic() + KILL_WAIT
            while time.monotonic() < deadline:
                alive.tick()
                time.sleep(0.05)

    def hold(self, kind: str, *, task_id: str | None = None, event_id: str | None = None) -> None:
        """Wait here if the orchestrator asked to stop this process at event ``kind``: until the
        orchestrator writes ``<hold>.release`` for this arming, then say so in
        ``claims/<hold>.<gen>.released`` (the orchestrator waits for that before arming again)."""
        name = f"hold-{self._ident.component}-{kind}"
        spec = self._claim(name)
        if spec is None:
            return
        self._events.emit("fault-point", task_id=task_id, event_id=event_id, point=name, hold=True)
        release = Path(spec["_dir"]) / f"{name}.release"
        deadline = time.monotonic() + float(spec.get("timeout", 30.0))
        while time.monotonic() < deadline:
            try:
                got = json.loads(release.read_text() or "{}")
            except (FileNotFoundError, ValueError):
                got = None
            if isinstance(got, dict) and str(got.get("gen", spec["_gen"])) == spec["_gen"]:
                break
            time.sleep(0.005)
        if "_claim" not in spec:  # a node's own copy: consuming the release is the answer
            with contextlib.suppress(FileNotFoundError):
                release.unlink()
            return
        with contextlib.suppress(OSError):
            os.close(os.open(f"{spec['_claim']}.released", _EXCL, 0o644))


# Set when the nodes do not share one control folder (the SSH backend copies points armed for any
# node to every node): a local rename is then atomic on this node only, so a claim of an "any"
# point waits for the orchestrator to grant it (``<claimed>.granted``) to exactly one claimer and
# deny it (``<claimed>.denied``) to the others. No answer within GRANT_TIMEOUT counts as denied.
ARBITER_ENV = "CHAOS_CONTROL_ARBITER"
GRANT_TIMEOUT = 10.0


KEEPALIVE_EVERY = 0.5


class _Keepalive:
    """Calls ``fn`` at most every ``KEEPALIVE_EVERY`` (errors ignored: it only helps)."""

    def __init__(self, fn: Callable[[], None] | None) -> None:
        self._fn = fn
        self._next = 0.0

    def tick(self) -> None:
        if self._fn is None or time.monotonic() < self._next:
            return
        self._next = time.monotonic() + KEEPALIVE_EVERY
        with contextlib.suppress(Exception):
            self._fn()


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
