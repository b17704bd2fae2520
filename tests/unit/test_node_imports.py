"""The services run in the node containers with only the node image's packages (Debian's python3,
etcd3, nats-py and their dependencies; chaos/cluster/docker/image.py): importing them must not
pull in what only the orchestrator has."""

from __future__ import annotations

import subprocess
import sys

import pytest

# What the orchestrator installs and the node image does not.
ORCHESTRATOR_ONLY = [
    "msgspec",
    "docker",
    "click",
    "yaml",
    "networkx",
    "matplotlib",
    "paramiko",
    "distributed",
]
SERVICES = [
    "chaos.workloads.lab1.service",
    "chaos.workloads.lab3.service",
    "chaos.node.runtime",
    "chaos.node.solution",
    "chaos.node.store",
]


@pytest.mark.parametrize("module", SERVICES)
def test_a_service_imports_with_the_node_images_packages(module: str) -> None:
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in ORCHESTRATOR_ONLY)
    code = f"import sys; {blocked}; import {module}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_check_is_real() -> None:
    # the same check on a module that needs msgspec fails
    code = "import sys; sys.modules['msgspec'] = None; import chaos.histories.ops"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "msgspec" in proc.stderr
