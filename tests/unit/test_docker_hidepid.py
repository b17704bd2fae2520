"""Each service of a Docker node gets a uid of its own, and the node's /proc shows it only its
own processes (chaos.cluster.docker.hidepid; the real mount and the attack it stops:
tests/integration/test_confinement_procs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.cluster.base import ClusterError
from chaos.cluster.docker import hidepid
from chaos.cluster.docker.cluster import (
    RUN_BLOCKS,
    RUN_UIDS,
    SERVICES_PER_NODE,
    DockerCluster,
    service_uid_of,
)

# a node's mountinfo as the engine leaves it, and after hide()
ENGINE = """\
77 60 0:42 / / ro,relatime - overlay overlay rw,lowerdir=/x
78 77 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
57 78 0:43 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
"""
HIDDEN = ENGINE.replace("- proc proc rw\n", "- proc proc rw,hidepid=invisible\n")


def test_the_mount_is_read_as_hiding_only_with_hidepid_and_its_flags() -> None:
    assert not hidepid.shows_hidepid(ENGINE)
    assert hidepid.shows_hidepid(HIDDEN)
    assert hidepid.shows_hidepid(ENGINE.replace("- proc proc rw\n", "- proc proc rw,hidepid=2\n"))
    # hidepid=1 hides nothing from a listing, and the contents of /proc/<pid>/stat are
    # what is hidden only from hidepid=2 on
    assert not hidepid.shows_hidepid(ENGINE.replace("proc rw\n", "proc rw,hidepid=noaccess\n"))
    # a remount that lost the engine's flags (what `mount -o remount,hidepid=2` alone does)
    lost = HIDDEN.replace("/proc rw,nosuid,nodev,noexec,relatime", "/proc rw,relatime")
    assert not hidepid.shows_hidepid(lost)
    # the last mount on /proc is what a process there sees
    over = HIDDEN + "90 78 0:50 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    assert not hidepid.shows_hidepid(over)
    assert not hidepid.shows_hidepid("")


def test_a_node_whose_init_is_gone_does_not_hide() -> None:
    assert not hidepid.hides(2**22 + 12345)  # past any pid_max: no such process


def _cluster(nodes: int = 3, run_id: str = "r1") -> DockerCluster:
    stub: Any = object()  # no engine is asked for a uid
    return DockerCluster(
        run_id=run_id, nodes=nodes, image="i", src_dir=Path("."), live_dir=Path("."), client=stub
    )


def test_each_service_of_a_run_has_a_uid_of_its_own_and_keeps_it() -> None:
    c = _cluster()
    uids = {
        (n, s): c.service_uid(n, "nobody", s)
        for n in ("n1", "n2", "n3")
        for s in ("api", "relay", "worker")
    }
    assert len(set(uids.values())) == 9
    for uid_gid in uids.values():
        uid, gid = uid_gid.split(":")
        assert uid == gid and 1_000_000 <= int(uid) < 2**31
    # started again (a restart after a crash): the same uid, its files still its own
    assert c.service_uid("n2", "nobody", "relay") == uids[("n2", "relay")]
    # a user named by the caller is taken as it is
    assert c.service_uid("n1", "0:0", "api") == "0:0"
    # another run's services: another block
    other = _cluster(run_id="r2")
    assert other.service_uid("n1", "nobody", "api") != uids[("n1", "api")]


def test_the_uid_layout_never_gives_two_services_one_uid_or_passes_2_31() -> None:
    assert service_uid_of(RUN_BLOCKS - 1, RUN_UIDS // SERVICES_PER_NODE - 1,
                          SERVICES_PER_NODE - 1) < 2**31  # fmt: skip
    seen = {service_uid_of(7, n, s) for n in range(4) for s in range(SERVICES_PER_NODE)}
    assert len(seen) == 4 * SERVICES_PER_NODE
    with pytest.raises(ClusterError):
        service_uid_of(7, 0, SERVICES_PER_NODE)
    c = _cluster(nodes=1)
    for i in range(SERVICES_PER_NODE):
        c.service_uid("n1", "nobody", f"s{i}")
    with pytest.raises(ClusterError, match="uid of its own"):
        c.service_uid("n1", "nobody", "one-more")
