"""What a workload and a nemesis see of the run in progress."""

from __future__ import annotations

import os
import random
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.cluster.base import Cluster, ControlChannel
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import Supervisor
from chaos.histories.files import write_atomic
from chaos.histories.jsonl import HistoryRecorder
from chaos.histories.limits import loads_bounded


@dataclass(kw_only=True)
class RunContext:
    spec: TestSpec
    cluster: Cluster
    # how fault points and holds reach the nodes: None when they read the orchestrator's control
    # folder itself (Docker's bind mount), else the backend's copier
    # (chaos.cluster.base.control_channel: asked once, here)
    channel: ControlChannel | None
    run_dir: Path
    live: Path
    origin: float
    history: HistoryRecorder
    events: EventTail
    supervisor: Supervisor
    faults: FaultLedger
    progress: Callable[[str], None]
    stop: threading.Event = field(default_factory=threading.Event)
    state: dict[str, Any] = field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.origin

    def control_dir(self, node: str | None = None) -> Path:
        d = self.live / "control" / (node or "any")
        d.mkdir(parents=True, exist_ok=True)
        return d

    # Fault points and holds go through these, never through control_dir() paths directly: on a
    # backend whose nodes do not share the orchestrator's disk (ControlChannel) they are copied to
    # the nodes, and the copy on the host stays the record of what was armed.

    def write_control(
        self, name: str, text: str, *, node: str | None = None, on: str | None = None
    ) -> None:
        """Arm ``name`` in the control folder of ``node`` (None: any node); ``on``: only node
        ``on`` needs to see it (a release for the process held there)."""
        write_atomic(self.control_dir(node) / name, text.encode(), durable=False)
        if self.channel is not None:
            self.channel.control_put(node or "any", name, text.encode(), on=on)

    def remove_control(self, name: str, *, node: str | None = None) -> None:
        """Disarm ``name`` (missing is fine), on the host and every node that had a copy."""
        (self.control_dir(node) / name).unlink(missing_ok=True)
        if self.channel is not None:
            self.channel.control_remove(node or "any", name)

    def control_exists(self, name: str, *, node: str | None = None, on: str | None = None) -> bool:
        """Whether ``name`` is still there (not consumed); ``on``: as the node ``on`` sees it."""
        if self.channel is not None and on is not None:
            return self.channel.control_exists(on, node or "any", name)
        return (self.control_dir(node) / name).exists()

    def claimed(self, name: str, gen: str) -> bool:
        """Whether a process really claimed the arming ``gen`` of ``name`` (armed for any node):
        the claim file it made with O_EXCL in the shared ``claims/`` folder — what confirms a
        ``fault-point`` event, which is only the service's word. Where nodes hold copies
        (ControlChannel), the backend's arbiter granted exactly one claim instead."""
        if self.channel is not None:
            return True
        return _regular(self.live / "claims" / f"any-{name}.{gen}")

    def claim(self, name: str, gen: str) -> Claim | None:
        """The claim of arming ``gen`` of ``name`` (armed for any node) in the shared ``claims/``
        folder, as the claimer wrote it: who it says it is. A request, never a fact: whoever
        reads it checks the pid against the host's own view before acting on it. None while
        there is none (or it is not a regular file with that shape); on a backend whose nodes
        hold copies (ControlChannel) there is no such file, and None always."""
        if self.channel is not None:
            return None
        return read_claim(self.live / "claims" / f"any-{name}.{gen}")

    def answer_taken(self, name: str, gen: str) -> bool:
        """Whether the claimer of arming ``gen`` of ``name`` read the orchestrator's answer (its
        word, in ``claims/``: used only to know when the answer may be removed). Where nodes hold
        copies (ControlChannel), there is no such file: True."""
        if self.channel is not None:
            return True
        return _regular(self.live / "claims" / f"any-{name}.{gen}.answered")

    def release_answered(self, name: str, gen: str, node: str) -> bool:
        """Whether the process held at ``name`` (arming ``gen``, on ``node``) took its release."""
        if self.channel is not None:
            return not self.control_exists(f"{name}.release", on=node)
        return _regular(self.live / "claims" / f"any-{name}.{gen}.released")

    def rng_for(self, purpose: str) -> random.Random:
        """An independent stream per purpose, so adding a draw in one place does not shift another."""
        return random.Random(f"{self.spec.seed}:{purpose}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """Who a claim file says made it (the service's word, see ``RunContext.claim``)."""

    node: str
    component: str
    pid: int


CLAIM_CAP = 4096


def read_claim(path: Path) -> Claim | None:
    """A claim file's content, read without following a link or blocking on a FIFO, capped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, CLAIM_CAP)
    finally:
        os.close(fd)
    try:
        got = loads_bounded(raw or b"{}")  # a service's claim: bounded, TooDeep is a ValueError
    except ValueError:
        return None
    if not isinstance(got, dict):
        return None
    node, component, pid = got.get("node"), got.get("component"), got.get("pid")
    if not isinstance(node, str) or not isinstance(component, str):
        return None
    if not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return Claim(node=node[:64], component=component[:64], pid=pid)


def _regular(path: Path) -> bool:
    """A regular file at ``path`` itself: a link a service planted in ``claims/`` is not a claim
    (``is_file`` would follow it to whatever it names on the host)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False
