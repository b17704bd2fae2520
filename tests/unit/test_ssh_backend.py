"""The SSH backend's pieces that need no machine: the nodes file, path mapping, fault refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cluster.base import ControlChannel, Freezable, Reapable
from chaos.cluster.docker.backend import DockerBackend
from chaos.cluster.ssh.backend import SSHBackend
from chaos.cluster.ssh.cluster import SSHCluster
from chaos.cluster.ssh.nodes import NodesFileError, load
from chaos.cluster.ssh.remote import HANDLED_OPS
from chaos.core.spec import TestSpec
from chaos.nemesis import table
from chaos.nemesis.registry import refuse_unsupported
from chaos.workloads import registry


def nodes_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "id_test").write_text("not really a key")
    p = tmp_path / "nodes.yaml"
    p.write_text(text)
    return p


GOOD = """\
known_hosts: kh
key: id_test
user: chaos
sudo: true
nodes:
  - host: 10.0.0.1
  - host: 10.0.0.2
    port: 2222
    user: root
    sudo: false
"""


def test_a_nodes_file_names_nodes_n1_to_nN_with_defaults(tmp_path: Path) -> None:
    f = load(nodes_file(tmp_path, GOOD))
    n1, n2 = f.nodes
    assert (n1.name, n1.host, n1.port, n1.user, n1.sudo) == ("n1", "10.0.0.1", 22, "chaos", True)
    assert (n2.name, n2.port, n2.user, n2.sudo) == ("n2", 2222, "root", False)
    assert n1.key == (tmp_path / "id_test").resolve() and f.known_hosts == (tmp_path / "kh")
    assert f.accept_new_host_keys is False
    assert n2.label == "n2 (root@10.0.0.2:2222)"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (GOOD.replace("port: 2222", "port: 99999"), r"nodes.yaml:8: nodes\[1\].port: a port"),
        (GOOD.replace("port: 2222", "prot: 2222"), r"nodes.yaml:8: nodes\[1\].prot: unknown field"),
        (GOOD.replace("sudo: true", "sudo: maybe"), r"nodes.yaml:4: sudo: true or false"),
        (
            GOOD.replace("  - host: 10.0.0.1\n", "  - port: 22\n"),
            r"nodes.yaml:6: nodes\[0\].host: missing",
        ),
        (GOOD.replace("key: id_test", "key: nope"), r"nodes.yaml:2: key: no such key file"),
        (GOOD.replace("key: id_test\n", ""), r"nodes.yaml:5: nodes\[0\].key: missing"),
        ("nodes: [", r"nodes.yaml:1: not valid YAML"),
        ("user: x\n", r"nodes.yaml:1: nodes: missing"),
    ],
)
def test_bad_nodes_files_name_file_line_and_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(NodesFileError, match=error):
        load(nodes_file(tmp_path, text))


def test_node_paths_map_into_the_runs_own_folder(tmp_path: Path) -> None:
    f = load(nodes_file(tmp_path, GOOD))
    c = SSHCluster(
        run_id="abc",
        nodes=list(f.nodes),
        conns={},
        venvs={"n1": "/v", "n2": "/v"},
        src_dir=tmp_path,
        live_dir=tmp_path,
        mounts={"/host/sol": "/opt/solution"},
    )
    r = "/var/lib/chaos/runs/abc"
    assert c.node_path("/chaos") == f"{r}/live"
    assert c.node_path("/chaos/control/any/x") == f"{r}/live/control/any/x"
    assert c.node_path("/chaosmonkey") == "/chaosmonkey"  # a prefix of a name is not a folder
    assert c.node_path("/data/etcd") == f"{r}/data/etcd"
    assert c.node_path("/opt/solution/protocol.py") == f"{r}/mnt/0/protocol.py"
    assert c.node_path("/opt/chaos-src") == f"{r}/src"
    assert c.node_path("/etc/hosts") == "/etc/hosts"
    env = c._env("n1", {"CHAOS_LIVE": "/chaos", "CHAOS_ETCD": "127.0.0.1:2379"})
    assert env["CHAOS_LIVE"] == f"{r}/live" and env["CHAOS_ETCD"] == "127.0.0.1:2379"
    assert env["PYTHONPATH"] == f"{r}/src" and env["PATH"].startswith("/v/bin:")
    assert isinstance(c, ControlChannel) and isinstance(c, Reapable)
    assert not isinstance(c, Freezable)


def test_a_fault_the_backend_cannot_do_is_refused_before_the_run(tmp_path: Path) -> None:
    ssh = SSHBackend(nodes_file(tmp_path, GOOD))
    assert not ssh.supports(Freezable) and ssh.supports(ControlChannel)
    assert DockerBackend().supports(Freezable) and not DockerBackend().supports(ControlChannel)
    wl = registry.get("lab3")
    for spec in (
        TestSpec(workload="lab3", nemesis=("freeze",)),
        TestSpec(workload="lab3", nemesis=("pause",), triggers=("freeze worker on delivery",)),
        TestSpec(
            workload="lab3", schedule={"steps": [{"at": 1, "fault": "freeze", "duration": 1}]}
        ),
    ):
        with pytest.raises(
            ValueError, match="fault freeze needs the Freezable capability, which backend ssh"
        ):
            refuse_unsupported(wl, spec, ssh)
        refuse_unsupported(wl, spec, DockerBackend())  # docker can
    refuse_unsupported(wl, TestSpec(workload="lab3", nemesis=("pause", "partition")), ssh)
    # a write point's sender is found by the host: a backend that cannot is refused at once
    held = TestSpec(workload="lab3", triggers=("kill worker after write of counter",))
    with pytest.raises(
        ValueError, match=r"needs the SocketOwners capability .*, which backend ssh"
    ):
        refuse_unsupported(wl, held, ssh)
    refuse_unsupported(wl, held, DockerBackend())


def test_every_undo_op_of_a_fault_the_ssh_backend_can_do_has_its_reaper(tmp_path: Path) -> None:
    ssh = SSHBackend(nodes_file(tmp_path, GOOD))
    ops = {k.undo for k in table.KINDS if k.undo and (k.needs is None or ssh.supports(k.needs))}
    assert ops <= HANDLED_OPS, ops - HANDLED_OPS
