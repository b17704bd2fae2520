"""What a workload and a nemesis see of the run in progress."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.cluster.base import Cluster
from chaos.core.ledger import FaultLedger
from chaos.core.live import EventTail
from chaos.core.spec import TestSpec
from chaos.core.supervisor import Supervisor
from chaos.histories.jsonl import HistoryRecorder


@dataclass(kw_only=True)
class RunContext:
    spec: TestSpec
    cluster: Cluster
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

    def rng_for(self, purpose: str) -> random.Random:
        """An independent stream per purpose, so adding a draw in one place does not shift another."""
        return random.Random(f"{self.spec.seed}:{purpose}")
