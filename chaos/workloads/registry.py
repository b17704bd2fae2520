"""Workloads by name. Third-party workloads register through the ``chaos.workloads`` entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any


def builtin() -> dict[str, Any]:
    from chaos.workloads.lab3.workload import Lab3

    found: dict[str, Any] = {"lab3": Lab3}
    try:
        from chaos.workloads.lab1.workload import Lab1

        found["lab1"] = Lab1
    except ImportError:
        pass
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
