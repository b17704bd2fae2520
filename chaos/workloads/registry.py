"""Workloads by name. Third-party workloads register through the ``chaos.workloads`` entry point
group: a name and a zero-argument factory returning a :class:`~chaos.core.workload.Workload`."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from chaos.core.workload import Workload

# Each workload is imported when it is asked for, not with the registry: a `chaos check` of one
# stored run or a run of one lab need not load every other lab's clients (etcd's gRPC stubs,
# nats-py), which was half of `chaos check`'s start.


def _lab1() -> Workload:
    from chaos.workloads.lab1.workload import Lab1

    return Lab1()


def _lab3() -> Workload:
    from chaos.workloads.lab3.workload import Lab3

    return Lab3()


def _etcd_register() -> Workload:
    from chaos.workloads.etcd_register import EtcdRegister

    return EtcdRegister()


def _etcd_append() -> Workload:
    from chaos.workloads.etcd_append import EtcdAppend

    return EtcdAppend()


def _etcd_rw_register() -> Workload:
    from chaos.workloads.etcd_rw_register import EtcdRwRegister

    return EtcdRwRegister()


def _jetstream_queue() -> Workload:
    from chaos.workloads.jetstream_queue import JetStreamQueue

    return JetStreamQueue()


BUILTIN: dict[str, Callable[[], Workload]] = {
    "lab1": _lab1,
    "lab3": _lab3,
    "etcd-register": _etcd_register,
    "etcd-append": _etcd_append,
    "etcd-rw-register": _etcd_rw_register,
    "jetstream-queue": _jetstream_queue,
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
