"""Backends by name (``--backend docker``). Third-party backends register through the
``chaos.backends`` entry point group: a name and a factory returning a Backend.

A backend may take options (``--nodes-file FILE`` becomes ``nodes_file=``): ``get`` passes those the
factory accepts and refuses, naming them, those it does not."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from chaos.cluster.base import Backend

DEFAULT = "docker"

# A backend's module is imported when it is asked for: the Docker SDK (with paramiko) is a third
# of a second that a run on another backend, or a command that starts none, need not pay. Each
# entry loads its backend's class; ``get`` reads the options it takes from that class itself.


def _docker() -> Callable[..., Backend]:
    from chaos.cluster.docker.backend import DockerBackend

    return DockerBackend


def _ssh() -> Callable[..., Backend]:
    from chaos.cluster.ssh.backend import SSHBackend

    return SSHBackend


BUILTIN: dict[str, Callable[[], Callable[..., Backend]]] = {
    "docker": _docker,
    "ssh": _ssh,
}


def names() -> list[str]:
    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group="chaos.backends")})


def _make(name: str, factory: Callable[..., Backend], options: dict[str, Any]) -> Backend:
    given = {k: v for k, v in options.items() if v is not None}
    params = inspect.signature(factory).parameters
    unknown = sorted(k for k in given if k not in params)
    if unknown:
        flags = ", ".join("--" + k.removesuffix("_file").replace("_", "-") for k in unknown)
        raise ValueError(f"backend {name} takes no {flags}")
    return factory(**given)


def get(name: str, **options: Any) -> Backend:
    """A fresh backend of that name with its ``options`` (None: not given); ValueError naming the
    known ones otherwise, or an option the backend does not take."""
    if name in BUILTIN:
        return _make(name, BUILTIN[name](), options)
    for ep in entry_points(group="chaos.backends"):
        if ep.name == name:
            return _make(name, ep.load(), options)
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(names())}")
