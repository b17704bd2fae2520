"""Workloads by name. Third-party workloads register through the ``chaos.workloads`` entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any


def builtin() -> dict[str, Any]:
    from chaos.workloads.etcd_register import EtcdRegister
    from chaos.workloads.jetstream_queue import JetStreamQueue
    from chaos.workloads.lab1.workload import Lab1
    from chaos.workloads.lab3.workload import Lab3

    found: dict[str, Any] = {
        "lab1": Lab1,
        "lab3": Lab3,
        "etcd-register": EtcdRegister,
        "jetstream-queue": JetStreamQueue,
    }
    return found


def names() -> list[str]:
    return sorted(set(builtin()) | {ep.name for ep in entry_points(group="chaos.workloads")})


def get(name: str) -> Any:
    table = builtin()
    if name in table:
        return table[name]()
    for ep in entry_points(group="chaos.workloads"):
        if ep.name == name:
            return ep.load()()
    raise ValueError(f"unknown test {name!r}; known: {', '.join(names())}")
