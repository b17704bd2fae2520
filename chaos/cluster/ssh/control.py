"""Fault points and holds on nodes that do not share the orchestrator's control folder.

A point armed for one node goes to that node. A point armed for "any node" is copied to every
node, and its services run with ``ARBITER_ENV``: a local claim (a rename, atomic on that node
only) then waits for an answer. The arbiter thread looks for claims every ``ARBITRATE_EVERY`` and
grants exactly one per arming, the first it sees, denying every other and removing the remaining
copies: the point fires once, as with one shared folder, a few tens of milliseconds later.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chaos.cluster.ssh.conn import Connection

ARBITRATE_EVERY = 0.02


def _each(fn: Callable[[str], Any], nodes: list[str]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        list(pool.map(fn, nodes))


class ControlFiles:
    def __init__(
        self, *, nodes: list[str], conns: dict[str, Connection], folder: str, stop: threading.Event
    ) -> None:
        self._nodes = nodes
        self._conns = conns
        self._folder = folder
        self._stop = stop
        # points armed for any node -> whether a claim of it was granted
        self._armed: dict[str, bool] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _path(self, folder: str, name: str) -> str:
        return f"{self._folder}/{folder}/{name}"

    def put(self, folder: str, name: str, data: bytes, *, on: str | None = None) -> None:
        if folder != "any" or on is not None:
            node = on if on is not None else folder
            self._conns[node].put_atomic(self._path(folder, name), data)
            return
        with self._lock:
            self._armed[name] = False  # not granted yet
        _each(lambda node: self._conns[node].put_atomic(self._path("any", name), data), self._nodes)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="ssh-any-points", daemon=True)
            self._thread.start()

    def remove(self, folder: str, name: str) -> None:
        if folder == "any":
            with self._lock:
                self._armed.pop(name, None)
        _each(
            lambda node: self._conns[node].remove(self._path(folder, name)),
            list(self._nodes) if folder == "any" else [folder],
        )

    def exists(self, node: str, folder: str, name: str) -> bool:
        return self._conns[node].exists(self._path(folder, name))

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _loop(self) -> None:
        decided: set[tuple[str, str]] = set()
        folder = f"{self._folder}/any"
        while not self._stop.wait(ARBITRATE_EVERY):
            with self._lock:
                names = dict(self._armed)
            if not names:
                continue
            for node in self._nodes:
                try:
                    listing = self._conns[node].listdir_sizes(folder)
                except Exception:
                    continue  # a node that does not answer now is asked again next round
                for f in sorted(listing):
                    name, sep, _ = f.partition(".claimed-")
                    if not sep or f.endswith((".granted", ".denied")) or name not in names:
                        continue
                    if (node, f) in decided:
                        continue
                    decided.add((node, f))
                    self._answer(node, folder, name, f)

    def _answer(self, node: str, folder: str, name: str, claimed: str) -> None:
        with self._lock:
            grant = self._armed.get(name) is False
            if grant:
                self._armed[name] = True
        with contextlib.suppress(Exception):
            self._conns[node].put_atomic(
                f"{folder}/{claimed}.{'granted' if grant else 'denied'}", b""
            )
        if grant:
            for other in self._nodes:
                with contextlib.suppress(Exception):
                    self._conns[other].remove(f"{folder}/{name}")
