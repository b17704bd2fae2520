"""Workloads by name. Third-party workloads register through the ``chaos.workloads`` entry point
group: a name and a zero-argument factory returning a :class:`~chaos.core.workload.Workload`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from chaos.core.workload import Workload

# Each workload is imported when it is asked for, not with the registry: a `chaos check` of one
# stored run or a run of one lab need not load every other lab's clients (etcd's gRPC stubs,
# nats-py), which was half of `chaos check`'s start.


def _lazy(module: str, name: str) -> Callable[[], Workload]:
    def make() -> Workload:
        wl: Workload = getattr(importlib.import_module(module), name)()
        return wl

    make.__qualname__ = name  # what a traceback or a repr of BUILTIN shows
    return make


# name -> (its module, its class)
_BUILTIN_AT: dict[str, tuple[str, str]] = {
    "lab1": ("chaos.workloads.lab1.workload", "Lab1"),
    "lab3": ("chaos.workloads.lab3.workload", "Lab3"),
    "etcd-register": ("chaos.workloads.etcd_register", "EtcdRegister"),
    "etcd-append": ("chaos.workloads.etcd_append", "EtcdAppend"),
    "etcd-rw-register": ("chaos.workloads.etcd_rw_register", "EtcdRwRegister"),
    "jetstream-queue": ("chaos.workloads.jetstream_queue", "JetStreamQueue"),
}
BUILTIN: dict[str, Callable[[], Workload]] = {n: _lazy(*at) for n, at in _BUILTIN_AT.items()}


def builtin_modules() -> list[str]:
    """The modules of the built-in workloads (a grade's warm process imports them once)."""
    return sorted({module for module, _ in _BUILTIN_AT.values()})


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
