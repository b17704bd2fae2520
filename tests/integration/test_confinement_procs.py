"""A service sees, signals and traces none of its siblings (issue 29, "Why" 1).

Each service of a node runs as a uid of its own and the node's ``/proc`` is mounted ``hidepid=2``
(chaos.cluster.docker.hidepid): a sibling cannot read a paused worker's state ``T`` from
``/proc/<pid>/stat``, nor stop, resume or kill it. The poller below runs as a service does
(``DockerCluster.spawn`` as ``nobody``) while the host stops the worker, and reports what it saw;
its controls run the same poller as the worker's own uid and, on a node whose ``/proc`` is
mounted without hidepid again, as another uid: both see the worker stopped, so the poller would
see it if anything but these two measures hid it.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from chaos.cluster.docker import hidepid
from chaos.cluster.docker.cluster import DockerCluster
from chaos.cluster.docker.quota import GROUP
from chaos.histories.store import load_run
from tests.integration.conftest import REPO, chaos, run_dir_from
from tests.integration.test_confinement_network import cluster

pytestmark = pytest.mark.integration

# runs in a node: for SECONDS, every 5 ms, list /proc and read the state of every process of
# another uid it finds there, and of the worker (its pid given, as the node's cgroup files would
# tell it); then try to stop, resume, kill and trace the worker. One JSON line on stdout.
POLLER = r"""
import ctypes, errno, json, os, signal, sys, time
seconds, worker = float(sys.argv[1]), int(sys.argv[2])
me = os.getuid()
foreign, worker_states, polls = {}, [], 0
def state(pid):
    with open("/proc/%d/stat" % pid) as fh:
        s = fh.read()
    return s[s.rfind(")") + 2]
end = time.monotonic() + seconds
while time.monotonic() < end:
    polls += 1
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            if os.stat("/proc/" + e).st_uid != me:
                foreign.setdefault(e, set()).add(state(int(e)))
        except OSError:
            pass
    try:
        worker_states.append(state(worker))
    except OSError as ex:
        worker_states.append(errno.errorcode[ex.errno])
    time.sleep(0.005)
def attempt(fn):
    try:
        fn()
        return "done"
    except OSError as ex:
        return errno.errorcode[ex.errno]
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, worker, 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
    libc.ptrace(17, worker, 0, 0)  # PTRACE_DETACH
print(json.dumps({
    "uid": me, "polls": polls,
    "foreign": {p: sorted(s) for p, s in foreign.items()},
    "worker_states": sorted(set(worker_states)),
    "signal0": attempt(lambda: os.kill(worker, 0)),
    "sigcont": attempt(lambda: os.kill(worker, signal.SIGCONT)),
    "sigkill": attempt(lambda: os.kill(worker, signal.SIGKILL)) if sys.argv[3:] == ["kill"] else "-",
    "ptrace": attempt(ptrace) if sys.argv[3:] == ["kill"] else "-",
}), flush=True)
"""

POLL_SECONDS = 2.5


def init_pid(engine: docker.DockerClient, c: DockerCluster, node: str) -> int:
    return int(engine.containers.get(c.container_name(node)).attrs["State"]["Pid"])


def poll(c: DockerCluster, name: str, worker: int, user: str, *, hostile: bool) -> Any:
    """Start the poller as ``name`` (``user``) while the host stops the worker for a second;
    what it saw."""
    argv = ["python3", "-c", POLLER, str(POLL_SECONDS), str(worker), *(["kill"] if hostile else [])]
    c.spawn("n1", name, argv, user=user)
    time.sleep(0.5)
    with stopped(c):
        time.sleep(1.0)
    deadline = time.monotonic() + 60
    while True:
        log = (c.get_file("n1", f"/var/log/chaos/{name}.log") or b"").decode()
        if log.strip():
            return json.loads(log.strip().splitlines()[-1])
        assert time.monotonic() < deadline, f"the poller {name} never reported"
        time.sleep(0.1)


@contextlib.contextmanager
def stopped(c: DockerCluster) -> Iterator[None]:
    """The worker stopped by the host, as the pause nemesis stops it."""
    assert c.signal("n1", "worker", signal.SIGSTOP) is not None
    try:
        deadline = time.monotonic() + 10  # the signal is delivered when the worker next runs
        while c.process_state("n1", "worker") != "T":
            assert time.monotonic() < deadline, "the worker never stopped"
            time.sleep(0.01)
        yield
    finally:
        c.signal("n1", "worker", signal.SIGCONT)


def test_a_service_sees_and_signals_none_of_its_siblings(engine: docker.DockerClient) -> None:
    with cluster(engine, nodes=1) as c:
        init = init_pid(engine, c, "n1")
        assert hidepid.hides(init)
        worker = c.spawn("n1", "worker", ["python3", "-c", "import time; time.sleep(600)"],
                         user="nobody")  # fmt: skip
        worker_uid = c.service_uid("n1", "nobody", "worker")
        # the services of one node hold uids of their own
        assert len({c.service_uid("n1", "nobody", s) for s in ("api", "relay", "worker")}) == 3
        # and share the node's services' groups, tasks and memory, where the host has them
        hp = c.host_pid("n1", "worker")
        groups = Path(f"/proc/{hp}/cgroup").read_text()
        for controller in ("pids", "memory"):
            if Path("/sys/fs/cgroup", controller).is_dir():
                line = next(ln for ln in groups.splitlines() if ln.split(":")[1] == controller)
                assert line.endswith("/" + GROUP), groups

        sibling = poll(c, "api", worker, "nobody", hostile=True)
        assert sibling["uid"] != int(worker_uid.split(":")[0])
        assert sibling["polls"] > 50, sibling  # it did poll, all along the stop
        # no process of another uid, not the worker, not root's (etcd, the init)
        assert sibling["foreign"] == {}, sibling
        assert sibling["worker_states"] == ["ENOENT"], sibling
        # nor stop, resume, kill or trace it: it is still running, as the worker it was
        for what in ("signal0", "sigcont", "sigkill", "ptrace"):
            assert sibling[what] == "EPERM", (what, sibling)
        assert c.pid("n1", "worker") == worker and c.process_state("n1", "worker") != "T"

        # control: the worker's own uid sees it stopped and may signal it
        same = poll(c, "same-uid", worker, worker_uid, hostile=False)
        assert "T" in same["worker_states"], same
        assert same["signal0"] == "done", same

        # control: /proc without hidepid, and another uid reads the worker's state (the attack
        # issue 29 measured); signalling it is still refused by the uid alone
        undo = ["nsenter", "-t", str(init), "-m", "mount", "-o",
                "remount,nosuid,nodev,noexec,hidepid=0", "/proc"]  # fmt: skip
        subprocess.run(undo, check=True, capture_output=True, timeout=30)
        assert not hidepid.hides(init)
        bare = poll(c, "bare-proc", worker, "nobody", hostile=True)
        assert "T" in bare["worker_states"], bare
        assert str(worker) in bare["foreign"] and bare["sigkill"] == "EPERM", bare


ATTACK = str(REPO / "tests" / "fixtures" / "redteam" / "proc_watch")
# lab3's stale-read configuration (chaos/workloads/lab3/grade.yaml): the worker stopped for 2 s
PAUSE = ("--trigger", "pause worker before write of counter for 2s", "-o", "ack_wait=3",
         "-o", "work_seconds=0.2", "-o", "set_size=2", "--time-limit", "15",
         "--recovery-timeout", "10", "--seed", "3", "-q")  # fmt: skip


def test_a_solution_polling_proc_sees_no_sibling_while_the_worker_is_paused(
    tmp_path: Path,
) -> None:
    """The attack of issue 29's "Why" 1 as a solution: the api polls /proc every 5 ms for its
    siblings' states and tries to resume and kill every process it can name, while the worker
    is paused; it must have seen none of them, and signalled none."""
    p = chaos("run", "lab3", "--solution", ATTACK, *PAUSE, store=tmp_path, timeout=300)
    run = load_run(run_dir_from(p))
    paused = [o for o in run.history if isinstance(o.extra.get("trigger"), dict)]
    assert paused and paused[0].extra["trigger"]["component"] == "worker", run.history
    where = str(paused[0].extra["trigger"]["node"])
    # the paused worker's own node first: its api is the one that would have seen it stopped
    for node in sorted(("n1", "n2", "n3"), key=lambda n: n != where):
        log = (run.path / "logs" / node / "api.log").read_text()
        seen = [json.loads(ln[len("PROC-WATCH ") :]) for ln in log.splitlines()
                if ln.startswith("PROC-WATCH ")]  # fmt: skip
        assert seen, f"the api on {node} never reported: {log[-2000:]}"
        last = seen[-1]
        assert last["polls"] > 100, last  # it polled through the run, the pause included
        assert last["own"] >= 1, last  # it sees itself: the polling works
        # not the paused worker (no state of it at all), no process of another uid, and no
        # sibling took a signal from it
        saw = {k: last[k] for k in ("worker", "signalled", "foreign")}
        assert saw == {"worker": [], "signalled": [], "foreign": {}}, (node, last)
        assert last["refused"], (node, last)  # it named its siblings' pids, and was refused
    # the reference's protocol under it: nothing of the run was disturbed
    assert p.returncode == 0, p.stdout + p.stderr
