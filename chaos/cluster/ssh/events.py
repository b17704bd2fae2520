"""The services' event files, collected from the nodes while the run goes on.

Services append JSON lines stamped with their node's CLOCK_MONOTONIC to the run folder's
``live/events/``. A collector thread tails those files over SFTP by offset every
``COLLECT_EVERY`` and appends the complete lines to the orchestrator's ``<live>/events/``, so the
event tail, triggers and recovery checks work as on Docker. Each line is moved onto the
orchestrator's clock with its node's offset estimate (``mono``) and keeps the node's own reading
(``node_mono``).
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

from chaos.cluster.ssh.clock import ClockEstimate
from chaos.cluster.ssh.conn import Connection
from chaos.histories.growing import GrowingLines
from chaos.histories.limits import loads_bounded

# the nemeses choose targets from events (lab1's lock holder, lab3's busy worker): they are only
# as fresh as the last pull
COLLECT_EVERY = 0.05


class EventCollector:
    def __init__(
        self,
        *,
        nodes: list[str],
        conns: dict[str, Connection],
        folder: str,
        live: Path,
        clocks: dict[str, ClockEstimate],
    ) -> None:
        self._nodes = nodes
        self._conns = conns
        self._folder = folder
        self._dest = live / "events"
        self._clocks = clocks  # filled by the cluster at start; read here
        self._lines: GrowingLines[tuple[str, str]] = GrowingLines()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        def loop() -> None:
            while not stop.wait(COLLECT_EVERY):
                with contextlib.suppress(Exception):  # a partitioned moment: next round
                    self.collect()

        self._thread = threading.Thread(target=loop, name="ssh-events", daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def collect(self) -> int:
        """Append new complete lines from every node; returns how many."""
        with self._lock:
            return sum(self._one(node) for node in self._nodes)

    def _one(self, node: str) -> int:
        c = self._conns[node]
        est = self._clocks.get(node)
        n = 0
        for name, size in sorted(c.listdir_sizes(self._folder).items()):
            if not name.endswith(".jsonl"):
                continue
            key = (node, name)
            if size <= self._lines.offset(key):
                continue
            chunk = c.get(f"{self._folder}/{name}", self._lines.offset(key))
            if not chunk:
                continue
            lines, _ = self._lines.feed(key, chunk)
            out = [convert(line, est) for line in lines if line.strip()]
            if out:
                with open(self._dest / name, "a", encoding="utf-8") as fh:
                    fh.write("".join(out))
                n += len(out)
        return n


def convert(line: bytes, est: ClockEstimate | None) -> str:
    """One event line on the orchestrator's clock (a line that is not JSON passes as it is: the
    event tail reports it)."""
    try:
        rec = loads_bounded(line)  # too deep (TooDeep) passes as it is, as a line not JSON
    except ValueError:
        return line.decode(errors="replace") + "\n"
    if est is not None and isinstance(rec, dict) and isinstance(rec.get("mono"), int | float):
        rec["node_mono"] = rec["mono"]
        rec["mono"] = est.to_local(float(rec["mono"]))
    return json.dumps(rec, separators=(",", ":")) + "\n"
