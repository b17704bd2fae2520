"""Inside a run, the code under test reaches its own node and the lab's ports, nothing else.

The run's host chain keeps a node's traffic inside its run (test_confinement_network.py); this is
the node's own chain (chaos.workloads.systems.egress): every uid but root's — the services run as
uids of their own — may connect to its own node (loopback), answer connections, and open TCP to
the ports the workload names on the cluster's members. The probe runs as a service uid in node
n1 against listeners that root keeps in n2 on a lab port and on a port the lab does not use.
"""

from __future__ import annotations

import json
import subprocess

import docker
import pytest

from chaos.workloads.systems import egress
from tests.integration.test_confinement_network import PROBE, cluster, listen

pytestmark = pytest.mark.integration

LAB_PORT = 4222  # lab3's broker
OTHER_PORT = 9999  # nothing of the lab listens here


def probe_as(container: str, user: str, targets: list[tuple[str, int]]) -> dict[str, str]:
    p = subprocess.run(
        ["docker", "exec", "-u", user, container, "python3", "-c", PROBE, json.dumps(targets)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    return dict(json.loads(p.stdout)["outcomes"])


def test_a_service_reaches_its_node_and_the_labs_port_and_nothing_else_of_its_run(
    engine: docker.DockerClient,
) -> None:
    with cluster(engine) as c:
        listen(c, "n2", (LAB_PORT, OTHER_PORT))
        listen(c, "n1", (OTHER_PORT,))
        peer = c.address("n2")
        targets = [(peer, LAB_PORT), (peer, OTHER_PORT), ("127.0.0.1", OTHER_PORT)]
        n1 = c.container_name("n1")
        # before the chain: the service user reaches any port of another member
        assert set(probe_as(n1, "65534:65534", targets).values()) == {"open"}
        egress.install(c, (LAB_PORT,))
        egress.install(c, (LAB_PORT,))  # idempotent: the chain is rebuilt, the jump not doubled
        got = probe_as(n1, "65534:65534", targets)
        assert got[f"{peer} {LAB_PORT}"] == "open", got
        assert got[f"127.0.0.1 {OTHER_PORT}"] == "open", got  # its own node
        # refused at once (a reset), not left to time out
        assert got[f"{peer} {OTHER_PORT}"] == "ECONNREFUSED", got
        # another service uid of the run, the same
        assert probe_as(n1, "1000301:1000301", targets)[f"{peer} {OTHER_PORT}"] == "ECONNREFUSED"
        # root (etcd, the broker, the proxy, the orchestrator's tools) is not confined by it
        assert set(probe_as(n1, "0:0", targets).values()) == {"open"}
        rules = c.net_exec("n1", ["iptables", "-S", "OUTPUT"]).output
        assert rules.count(f"-j {egress.CHAIN}") == 1, rules
