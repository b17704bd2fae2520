"""Workloads by name. Third-party workloads register through the ``chaos.workloads`` entry point
group: a name and a zero-argument factory returning a :class:`~chaos.core.workload.Workload`."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from chaos.core.workload import Workload
from chaos.workloads.etcd_append import EtcdAppend
from chaos.workloads.etcd_register import EtcdRegister
from chaos.workloads.etcd_rw_register import EtcdRwRegister
from chaos.workloads.jetstream_queue import JetStreamQueue
from chaos.workloads.lab1.workload import Lab1
from chaos.workloads.lab3.workload import Lab3

BUILTIN: dict[str, Callable[[], Workload]] = {
    "lab1": Lab1,
    "lab3": Lab3,
    "etcd-register": EtcdRegister,
    "etcd-append": EtcdAppend,
    "etcd-rw-register": EtcdRwRegister,
    "jetstream-queue": JetStreamQueue,
}


def names() -> list[str]:
    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group="chaos.workloads")})


def get(name: str) -> Workload:
    """A fresh workload of that name; ValueError naming the known ones otherwise."""
    if name in BUILTIN:
        return BUILTIN[name]()
    for ep in entry_points(group="chaos.workloads"):
        if ep.name == name:
            wl: Workload = ep.load()()
            return wl
    raise ValueError(f"unknown workload {name!r}; known: {', '.join(names())}")
