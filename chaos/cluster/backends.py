"""Backends by name (``--backend docker``). Third-party backends register through the
``chaos.backends`` entry point group: a name and a factory returning a Backend.

A backend may take options, each declared once (chaos.run_option; the SSH backend's
``--nodes-file FILE`` becomes ``nodes_file=``): the commands' options are made from
:func:`options`, and ``get`` passes a backend those its factory accepts and refuses, naming them,
those it does not. A third-party backend's options are read from its factory's ``options``
attribute when it is asked for (its class is not loaded for ``--help``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from chaos.cluster.base import Backend
from chaos.cluster.ssh import options as ssh_options
from chaos.run_option import RunOption

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


# each built-in backend's declared options (read without loading the backend)
OPTIONS: dict[str, tuple[RunOption, ...]] = {
    "docker": (),
    "ssh": ssh_options.OPTIONS,
}


def options() -> tuple[RunOption, ...]:
    """Every built-in backend's options, each once (two backends may take the same one)."""
    seen: dict[str, RunOption] = {}
    for declared in OPTIONS.values():
        for o in declared:
            seen.setdefault(o.name, o)
    return tuple(seen.values())


def _plugins() -> Any:
    """The backends other packages declare (entry points ``chaos.backends``). Looked up when
    asked: importlib.metadata (with email) is ~10 ms of every command's start, `chaos check`'s
    too, which never asks."""
    from importlib.metadata import entry_points

    return entry_points(group="chaos.backends")


def names() -> list[str]:
    return sorted(set(BUILTIN) | {ep.name for ep in _plugins()})


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
    for ep in _plugins():
        if ep.name == name:
            return _make(name, ep.load(), options)
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(names())}")
