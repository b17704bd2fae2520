"""Watching the quotas of a run: what the code under test filled to its size.

Filling a quota is not an anomaly of the protocol, but it cuts what the run can show: a service
that cannot write its log or its temporary files fails in ways the lab did not ask about, and the
events past the tail's cap were never read. So a run that went over a quota is ``unknown``, never
``valid``: :class:`QuotaWatch` looks twice a second (a cluster that is
:class:`~chaos.cluster.base.Sized`, and the event tail's caps), stops the workload at the first
breach, and the orchestrator writes what it saw into ``final.json`` → ``over_quota``, where the
``complete-record`` checker finds it.
"""

from __future__ import annotations

import threading

from chaos.cluster.base import Sized
from chaos.core.live import EventTail

INTERVAL = 0.5


class QuotaWatch:
    """A thread that samples the quotas until :meth:`close`; :attr:`breaches` says what it saw."""

    def __init__(self, cluster: object, tail: EventTail, stop: threading.Event) -> None:
        self._cluster = cluster if isinstance(cluster, Sized) else None
        self._tail = tail
        self._stop = stop
        self._done = threading.Event()
        self._seen: dict[str, None] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="quota-watch", daemon=True)

    def start(self) -> QuotaWatch:
        self._thread.start()
        return self

    def sample(self) -> list[str]:
        """Look once; returns every breach seen so far."""
        found = list(self._cluster.over_quota()) if self._cluster is not None else []
        if self._tail.over_quota is not None:
            found.append(self._tail.over_quota)
        with self._lock:
            for f in found:
                self._seen.setdefault(f, None)
            return list(self._seen)

    @property
    def breaches(self) -> list[str]:
        with self._lock:
            return list(self._seen)

    def _loop(self) -> None:
        while not self._done.wait(INTERVAL):
            try:
                if self.sample():
                    self._stop.set()  # the run cannot show anything more: end the workload
            except Exception:  # a failed look is retried; the final sample decides
                continue

    def close(self) -> list[str]:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(5)
        return self.breaches
