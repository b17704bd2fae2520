"""Warm runs: each ``chaos run`` of a grade is a fork of a process that has chaos imported already.

A fresh interpreter per run cost its start and imports every time (the Docker SDK, the etcd and
NATS clients, matplotlib, the checkers: 1.2 s of wall and 1.6 s of CPU on a quiet machine, 3.5 to
5.9 s under load). Here a *fork server* (the standard library's ``multiprocessing`` forkserver)
imports :data:`PRELOAD` once; each run is a fork of it that calls the same command-line entry
point with the same arguments a subprocess would get, so exit statuses, stored runs and verdicts
are those of ``chaos run`` itself.

What the subprocess gave, a fork keeps:

- the run is alone in its own session (``setsid`` first thing): a time-out or Ctrl-C kills the
  run's whole process group, and a run that kills its own group (or crashes) takes nothing else
  with it — not the fork server, not the grader;
- it gets SIGTERM when the fork server dies (``PR_SET_PDEATHSIG``), and the fork server exits
  when the grader dies: an orphaned run heals and removes its cluster, as before;
- the fork server is single-threaded and holds no lock, socket or client when it forks (it only
  imported modules; the grader's threads are in another process), so a child never inherits a
  lock held by a thread that does not exist in it. If the fork server dies, the next run starts
  a new one.

The server is started on the first run and lives as long as the process that started it.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from chaos.workloads import registry

# what a run imports (measured: the modules loaded by a lab3 run and a lab1 run), with every
# built-in workload's module (chaos.workloads.registry); a name that
# cannot be imported is skipped by the fork server, and the run then imports it itself
PRELOAD = (
    "chaos.grade.warm",  # the children's own code (their target, and prctl loaded)
    "chaos.cli",
    "chaos.cli.run",
    "chaos.cli.check",
    "chaos.cli.report",
    "chaos.orchestrator.plan",
    "chaos.orchestrator.run",
    "chaos.cluster.docker.backend",
    "chaos.cluster.ssh",
    "chaos.report.page",
    "chaos.report.plots",
    "nats.aio.client",
    "nats.js",
    "PIL.PngImagePlugin",
)
# CHAOS_GRADE_WARM=0 on a worker: every run a fresh interpreter (``chaos run`` in a subprocess)
ENV = "CHAOS_GRADE_WARM"

_lock = threading.Lock()
_context: Any = None


def enabled() -> bool:
    return os.environ.get(ENV, "1") not in ("0", "no", "false")


def module_of(prefix: Sequence[str] | None) -> str | None:
    """The module a run's command runs, when it can be run warm: this Python's ``-m MODULE``
    (None: the default, chaos.cli). A command of another interpreter or a script: None."""
    if prefix is None:
        return "chaos.cli"
    if len(prefix) == 3 and prefix[0] == sys.executable and prefix[1] == "-m":
        return prefix[2]
    return None


def _forkserver() -> Any:
    global _context
    with _lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload([*PRELOAD, *registry.builtin_modules()])
            _context = ctx
        return _context


def start() -> None:
    """Start the fork server now rather than with the first run, and wait until it has made its
    imports (a second or more): one fork that does nothing."""
    proc = _forkserver().Process(target=_nothing, name="chaos-warm-up", daemon=True)
    with _lock, _not_daemonic():
        proc.start()
    proc.join()


def _nothing() -> None:
    pass


def server_pid() -> int | None:
    """The fork server's process id, once one runs (tests: it survives a run that crashes)."""
    from multiprocessing import forkserver

    pid: int | None = getattr(forkserver._forkserver, "_forkserver_pid", None)
    return pid


class WarmRun:
    """One run in a fork of the warm process. ``pid`` and ``wait`` behave as a
    ``subprocess.Popen``'s (a negative status: killed by that signal), so the grader's time-out
    and Ctrl-C treat a warm run and a subprocess alike (chaos.grade.task)."""

    def __init__(self, module: str, args: Sequence[str], output: str) -> None:
        # daemon: a worker that exits terminates (SIGTERM) a run still under way, which heals and
        # tears down, rather than waiting for it
        self._proc = _forkserver().Process(
            target=_child, args=(module, tuple(args), output), name="chaos-run", daemon=True
        )
        with _lock, _not_daemonic():
            self._proc.start()
        self.pid: int = self._proc.pid

    def wait(self, timeout: float | None = None) -> int:
        self._proc.join(timeout)
        code: int | None = self._proc.exitcode
        if code is None:
            raise subprocess.TimeoutExpired("chaos run", timeout or 0.0)
        return code


@contextlib.contextmanager
def _not_daemonic() -> Iterator[None]:
    """A Dask worker started by its nanny is a daemonic process, and multiprocessing refuses
    children to those (so that none is orphaned when it is terminated). A run is not orphaned:
    the fork server exits with the worker and the run then gets SIGTERM (PR_SET_PDEATHSIG), heals
    and tears down. So the refusal is lifted for the start (under _lock: it is the process's)."""
    config: dict[str, Any] = multiprocessing.current_process()._config  # type: ignore[attr-defined]
    daemon = config.pop("daemon", None)
    try:
        yield
    finally:
        if daemon is not None:
            config["daemon"] = daemon


def _load_prctl() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: an orphaned run then runs to its end
        return None


# loaded with the module, never in a child forked from a threaded process (chaos.grade.task's
# subprocesses): an import there could wait forever on a lock another thread held at fork time
PRCTL = _load_prctl()
PR_SET_PDEATHSIG = 1


def _child(module: str, args: tuple[str, ...], output: str) -> None:
    """In the fork: its own session, SIGTERM when the fork server dies, the output to ``output``
    and nothing on stdin, then the command line as ``MODULE args`` would run it."""
    os.setsid()
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() == 1:  # the server died before the call: no signal will come
            os._exit(128 + int(signal.SIGTERM))
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)
    # the default dispositions a fresh interpreter has (the fork server ignores SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the command line `python -m MODULE args` has: click and `chaos run` read it from sys.argv
    sys.argv = [module, *args]
    importlib.import_module(module).main()
