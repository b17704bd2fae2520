"""Backends by name (``--backend docker``). Third-party backends register through the
``chaos.backends`` entry point group: a name and a zero-argument factory returning a Backend."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from chaos.cluster.base import Backend
from chaos.cluster.docker.backend import DockerBackend

DEFAULT = "docker"

BUILTIN: dict[str, Callable[[], Backend]] = {
    "docker": DockerBackend,
}


def names() -> list[str]:
    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group="chaos.backends")})


def get(name: str) -> Backend:
    """A fresh backend of that name; ValueError naming the known ones otherwise."""
    if name in BUILTIN:
        return BUILTIN[name]()
    for ep in entry_points(group="chaos.backends"):
        if ep.name == name:
            backend: Backend = ep.load()()
            return backend
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(names())}")
