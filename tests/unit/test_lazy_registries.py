"""The registries name their workloads and backends without importing them: a `chaos check` of a
stored run, or a run on another backend, does not pay for the Docker SDK, paramiko or every lab's
clients (etcd's gRPC stubs, nats-py). Asking for one imports that one."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("docker", "paramiko", "etcd3", "grpc", "nats")


def _loaded_after(code: str) -> set[str]:
    # a fresh interpreter: this one has imported everything the other tests needed
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return {m.split(".")[0] for m in out.split()}


def test_naming_the_workloads_and_backends_imports_none_of_them() -> None:
    loaded = _loaded_after(
        "from chaos.workloads import registry\nfrom chaos.cluster import backends\n"
        "registry.names(); backends.names()"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_asking_for_one_imports_it_and_only_what_it_needs() -> None:
    loaded = _loaded_after(
        "from chaos.workloads import registry\nwl = registry.get('lab3')\n"
        "assert type(wl).__name__ == 'Lab3'"
    )
    assert "etcd3" in loaded  # lab3's own client of etcd
    assert "docker" not in loaded and "paramiko" not in loaded  # no backend was asked for
    with_backend = _loaded_after(
        "from chaos.cluster import backends\nb = backends.get('docker')\n"
        "assert type(b).__name__ == 'DockerBackend'"
    )
    assert "docker" in with_backend
