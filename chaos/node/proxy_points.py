"""Write points: a fault aimed at a transaction, decided and held by the node's etcd proxy.

Why here and not in the service: a point the service's own process reaches (a hold file it reads,
a transaction it numbers) is a point the code under test can see coming, count, or move. The
proxy is root's, outside the service user's reach, and every write of the node's services passes
through it. So the orchestrator arms it through a root-only file, ``<state>/control/write-point``::

    {"gen": "…", "op": "write" | "read", "moment": "before" | "after", "keys": ["/lab3/counter"]}

and the proxy holds the first matching call of the arming — for a write, the first that changes
what the group holds (chaos.node.write_effect) — and, until its release, every further call of
the node that matches the same point. A write — ``before``: a ``KV/Txn``,
``KV/Put`` or ``KV/DeleteRange`` that could write under one of ``keys`` (either branch of a
transaction), held before it is forwarded; ``after``: one that did write there (the executed
branch), held after etcd answered, before the answer goes back. A read: a ``KV/Range`` of a key
under ``keys``, held before it is forwarded or after etcd answered (a check whose answer arrives
late: the race check-then-act lives in). An arming with ``during`` (chaos.node.deliveries) fires
only on a call made while the node's NATS proxy has a delivery in flight to the node's services:
lab3's read points, so that a read between deliveries — no check is near — does not take the
one firing. It says so in ``fired-<gen>`` (the node, the peer's
TCP port, the keys) and waits for the orchestrator's ``release-<gen>`` (``{"forward": bool}``):
meanwhile the orchestrator finds the process by the port (from the host) and faults it. To the
code under test the held call is a slow network, before or after the fact: nothing it can read
says the point is armed, and it cannot tell a held call from a slow one until the fault has
happened. Exactly one proxy of the cluster fires an arming: the claim is an O_EXCL file in a
root-only folder every node's proxy sees (as ``txn-error`` does).

Standard library only: the caller decodes the keys.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.node import deliveries
from chaos.node.deliveries import Gate

ARM_FILE = "write-point"
# a held call waits at most this long for its release, then goes on as if released (the
# orchestrator died or lost the run): a proxy never keeps a write forever
HOLD_LIMIT = 120.0
# later firings an arming may chain (``then``): a trigger's ``N times`` of a fault that kills
MAX_THEN = 16
POLL = 0.005
_EXCL = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


@dataclass(frozen=True, slots=True)
class Match:
    """An armed point a call matches, not yet fired (:meth:`WritePoints.match`)."""

    gen: str
    op: str
    moment: str
    keys: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    hold: float | None = None  # the arming's: the call goes on by itself this long after
    # the arming's ``during``: it fires only while the node has a delivery in flight
    gate: Gate | None = None


@dataclass(frozen=True, slots=True)
class _Arming:
    gen: str
    prefixes: tuple[str, ...]
    hold: float | None
    gate: Gate | None


@dataclass(frozen=True, slots=True)
class Held:
    """One held call: the arming's generation, for :meth:`WritePoints.wait`; ``first`` is the
    call that fired it (the orchestrator's fault is aimed at its sender), the others are calls
    that matched the same point while it was held."""

    gen: str
    first: bool = True
    # the proxy's own clock (monotonic) at which the call goes on by itself (the arming's
    # ``hold``), or None: only at the orchestrator's release
    until: float | None = None


def announce(control: Path, claims: Path | None, claim: str, gen: str, note: str) -> bool:
    """Say that this proxy fired arming ``gen``: first claim it as ``<claims>/<claim>`` with
    O_EXCL where the nodes share a root-only claims folder (False: another node's proxy fired
    it), then write ``<control>/fired-<gen>`` whole (a rename), for the orchestrator."""
    if claims is not None:
        try:
            fd = os.open(claims / claim, _EXCL, 0o600)
        except OSError:
            return False
        with os.fdopen(fd, "w") as fh:
            fh.write(note)
    tmp = control / f".fired-{gen}.tmp"
    tmp.write_text(note)
    os.replace(tmp, control / f"fired-{gen}")
    return True


def peer_port(peer: str) -> int | None:
    """The client's TCP port from gRPC's ``context.peer()`` (``ipv4:127.0.0.1:54321``)."""
    head, _, port = peer.rpartition(":")
    return int(port) if head.startswith(("ipv4:", "ipv6:")) and port.isdigit() else None


class Journal:
    """Appends one JSON line per write; the file and its folder are root's (0600 / 0700)."""

    def __init__(self, path: Path, node: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o600)
        self._fh = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._node = node
        self._seq = 0

    def write(self, rec: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            line = {"node": self._node, "seq": self._seq, **rec}
            self._fh.write(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n")
            self._fh.flush()


class WritePoints:
    """The orchestrator's armed write point on this node (see the module docstring)."""

    def __init__(self, control: Path, node: str, claims: Path | None = None) -> None:
        self._control = control
        self._node = node
        self._claims = claims
        self._fired: set[str] = set()
        # the firings held now, by generation: (op, moment, prefixes, until)
        self._holding: dict[str, tuple[str, str, list[str], float | None]] = {}
        self._lock = threading.Lock()

    def _arming(self, op: str, moment: str) -> _Arming | None:
        try:
            spec = json.loads((self._control / ARM_FILE).read_text() or "{}")
        except (OSError, ValueError):
            return None
        if not isinstance(spec, dict) or spec.get("moment") != moment:
            return None
        if spec.get("op", "write") != op:
            return None
        gen = str(spec.get("gen", ""))
        prefixes = [str(p) for p in spec.get("keys") or [] if str(p)]
        if not gen or "/" in gen or gen.startswith(".") or not prefixes:
            return None
        then = spec.get("then")
        if isinstance(then, int) and not isinstance(then, bool) and 0 < then <= MAX_THEN:
            gen = self._next_unfired(gen, then)
        gate = deliveries.gate(spec["during"]) if "during" in spec else None
        if "during" in spec and gate is None:
            return None  # a gate it cannot read: never fire ungated
        hold = spec.get("hold")
        if (
            isinstance(hold, bool)
            or not isinstance(hold, int | float)
            or not 0 <= hold <= HOLD_LIMIT
        ):
            hold = None
        return _Arming(gen, tuple(prefixes), None if hold is None else float(hold), gate)

    def _next_unfired(self, gen: str, then: int) -> str:
        """The first of an arming's chained generations (``gen``, ``gen-2``, … ``gen-<then+1>``,
        as chaos.core.capabilities.chained names them) that no proxy of the cluster fired yet, by
        the claims every proxy sees (this proxy's own firings, without a shared claims folder):
        a later firing is armed the moment the one before fired, whatever the orchestrator's
        latency (a redelivery's write came 2 s after the first kill, before the orchestrator's
        next arming at load 20). The last when all fired (:meth:`fire` refuses it)."""
        gens = [gen, *(f"{gen}-{k}" for k in range(2, then + 2))]
        for g in gens:
            if g in self._fired:
                continue
            if self._claims is not None and (self._claims / f"write-{g}").exists():
                continue
            return g
        return gens[-1]

    def take(
        self,
        op: str,
        moment: str,
        written: Sequence[str] | Callable[[], Sequence[str]],
        peer: str,
        changes: Callable[[Sequence[str]], bool] | None = None,
    ) -> Held | None:
        """Hold this call if it fires the arming for ``op`` (``write``/``read``) at ``moment``
        — a key of ``written`` falls under it and, for a write, ``changes(prefixes)`` says it
        changes what the group holds (chaos.node.write_effect); once per generation, once in the
        cluster — or if it matches a firing held now (a second call of the same point: a decoy
        sent first does not let the real one through). None when nothing is armed or it does
        not match. ``written`` may be a function: the proxy decodes a call's keys only when
        something is armed or held, not on every call it forwards."""
        with self._lock:
            holding = list(self._holding.items())
        arming = self._arming(op, moment)
        if arming is None and not holding:
            return None
        written = written() if callable(written) else written
        for gen, (hop, hmoment, hprefixes, until) in holding:
            if (hop, hmoment) == (op, moment) and _matching(written, hprefixes):
                return Held(gen, first=False, until=until)
        found = _match(arming, op, moment, written)
        if found is None or found.gen in self._fired:
            return None
        if op == "write" and changes is not None and not changes(found.prefixes):
            return None  # a write that leaves the group as it is: not the point's write
        extra: dict[str, str] = {}
        if found.gate is not None:
            delivery = found.gate.delivery()
            if delivery is None:
                return None  # no delivery in flight on this node: no check is near
            extra["delivery"] = delivery[:256]  # the evidence, in the firing's note
        return self.fire(found, peer, extra)

    def match(
        self, op: str, moment: str, written: Sequence[str] | Callable[[], Sequence[str]]
    ) -> Match | None:
        """The arming ``op`` at ``moment`` would fire for ``written``, without firing it: a proxy
        that must first forward what it holds after (the NATS proxy's ``after``) fires it then."""
        arming = self._arming(op, moment)
        if arming is None:
            return None
        return _match(arming, op, moment, written() if callable(written) else written)

    def fire(self, found: Match, peer: str, extra: dict[str, str] | None = None) -> Held | None:
        """Say that ``found`` fired here (once per generation, once in the cluster); None when it
        fired already, here or on another node's proxy. Until its release, a call that matches
        the same point is held with it (:meth:`take`)."""
        with self._lock:
            if found.gen in self._fired:
                return None
            self._fired.add(found.gen)
        note = json.dumps({"node": self._node, "gen": found.gen, "moment": found.moment,
                           "op": found.op, "port": peer_port(peer), "keys": list(found.keys[:16]),
                           "mono": time.monotonic(), "wall": time.time(),
                           **(extra or {})})  # fmt: skip
        if not announce(self._control, self._claims, f"write-{found.gen}", found.gen, note):
            return None  # another node's proxy fired this arming
        until = None if found.hold is None else time.monotonic() + found.hold
        with self._lock:
            self._holding[found.gen] = (found.op, found.moment, list(found.prefixes), until)
        return Held(found.gen, until=until)

    def wait(self, held: Held, limit: float = HOLD_LIMIT) -> dict[str, Any]:
        """Hold until the orchestrator's release of this firing; the release's words (``forward``
        False: drop the held request, the process that sent it was killed). No release within
        ``limit``: forwarded, and said so."""
        release = self._control / f"release-{held.gen}"
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if held.until is not None and time.monotonic() >= held.until:
                # the arming's hold is over: the call lands when it says, whatever the
                # orchestrator's own latency (a kill's arming has no hold: it waits to drop)
                self._end(held.gen)
                return {"forward": True, "released_by": "proxy"}
            try:
                got = json.loads(release.read_text())
            except (OSError, ValueError):  # not there yet, or being written: not a release
                got = None
            # only a whole release: a file caught between its creation and its words read as
            # {} and let a kill's held write go on (forward is the default of a missing word)
            if isinstance(got, dict) and isinstance(got.get("forward"), bool):
                self._end(held.gen)
                return got
            time.sleep(POLL)
        if held.first:  # a later call's own deadline ends no one else's hold
            self._end(held.gen)
        return {"forward": True, "timed_out": True}

    def _end(self, gen: str) -> None:
        with self._lock:
            self._holding.pop(gen, None)


def _match(arming: _Arming | None, op: str, moment: str, written: Sequence[str]) -> Match | None:
    if arming is None:
        return None
    keys = _matching(written, arming.prefixes)
    if not keys:
        return None
    return Match(arming.gen, op, moment, tuple(keys), arming.prefixes, arming.hold, arming.gate)


def _matching(written: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    return [k for k in written if any(k.startswith(p) for p in prefixes)]


def arguments(prog: str) -> argparse.ArgumentParser:
    """The command line both proxies take (``--listen``, ``--upstream``, ``--node``, ``--state``,
    ``--claims``); a proxy adds its own."""
    p = argparse.ArgumentParser(prog=f"python3 -m {prog}")
    p.add_argument("--listen", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--state", required=True, type=Path)
    p.add_argument("--claims", type=Path, default=None)
    return p
