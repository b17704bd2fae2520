"""``nodes.yaml``: the machines an SSH run uses, read with a clear error for bad input.

    known_hosts: known_hosts      # optional; default ~/.ssh/known_hosts; relative to this file
    user: chaos                   # defaults for every node (each may override)
    key: id_ed25519               # a private key file, relative to this file; or  agent: true
    sudo: true                    # run privileged commands (iptables) through `sudo -n`
    nodes:
      - host: 10.0.0.11           # the first node is n1, the second n2, ...
        port: 22
      - host: 10.0.0.12
        user: ubuntu

An error names the file, the line and the field (``nodes.yaml:7: nodes[1].port: ...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from chaos.cluster.base import node_name
from chaos.histories.files import read_input_text
from chaos.histories.limits import InputError
from chaos.histories.yaml_input import compose

FIELDS = {"host", "port", "user", "key", "agent", "sudo"}
TOP = FIELDS | {"nodes", "known_hosts", "accept_new_host_keys"}


class NodesFileError(ValueError):
    """Bad ``nodes.yaml``: the message starts with ``file:line: field:``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSpec:
    name: str  # n1..nN, by position in the file
    host: str
    port: int = 22
    user: str = "root"
    key: Path | None = None
    agent: bool = False
    sudo: bool = False

    @property
    def label(self) -> str:
        """How messages name a node: ``n2 (chaos@10.0.0.12:22)``."""
        return f"{self.name} ({self.user}@{self.host}:{self.port})"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodesFile:
    path: Path
    nodes: tuple[NodeSpec, ...]
    known_hosts: Path
    # accepting a host key never seen before needs this, explicitly (never a changed one)
    accept_new_host_keys: bool = False


def _scalar(node: yaml.Node, where: str, path: Path) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise NodesFileError(f"{path}:{node.start_mark.line + 1}: {where}: expected a value")
    return yaml.safe_load(yaml.serialize(node))


def _fields(
    node: yaml.Node, allowed: set[str], where: str, path: Path
) -> dict[str, tuple[yaml.Node, Any]]:
    if not isinstance(node, yaml.MappingNode):
        raise NodesFileError(f"{path}:{node.start_mark.line + 1}: {where}: expected a mapping")
    out: dict[str, tuple[yaml.Node, Any]] = {}
    for k, v in node.value:
        key = str(k.value)
        field = f"{where}.{key}" if where else key
        if key not in allowed:
            raise NodesFileError(
                f"{path}:{k.start_mark.line + 1}: {field}: unknown field; "
                f"known: {', '.join(sorted(allowed))}"
            )
        out[key] = (v, None if key == "nodes" else _scalar(v, field, path))
    return out


def _check(
    values: dict[str, tuple[yaml.Node, Any]], where: str, path: Path, base: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (node, value) in values.items():
        line = node.start_mark.line + 1
        field = f"{where}.{key}" if where else key

        def bad(msg: str, line: int = line, field: str = field) -> NodesFileError:
            return NodesFileError(f"{path}:{line}: {field}: {msg}")

        if key == "port":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
                raise bad(f"a port number (1-65535), not {value!r}")
        elif key in ("sudo", "agent", "accept_new_host_keys"):
            if not isinstance(value, bool):
                raise bad(f"true or false, not {value!r}")
        elif key in ("host", "user"):
            if not isinstance(value, str) or not value.strip():
                raise bad("a non-empty string")
        elif key in ("key", "known_hosts"):
            if not isinstance(value, str) or not value.strip():
                raise bad("a file path")
            p = (base / Path(value).expanduser()).resolve()
            if key == "key" and not p.is_file():
                raise bad(f"no such key file {p}")
            value = p
        out[key] = value
    return out


# a nodes file lists a few machines
MAX_NODES_BYTES = 1 << 20


def load(path: Path) -> NodesFile:
    """Read and validate ``path``; raises :class:`NodesFileError` naming file, line and field."""
    try:
        root = compose(path, read_input_text(path, MAX_NODES_BYTES))
    except InputError as e:
        raise NodesFileError(str(e)) from None
    if root is None:
        raise NodesFileError(f"{path}:1: nodes: the file is empty; it needs a list of nodes")
    base = path.resolve().parent
    top = _fields(root, TOP, "", path)
    if "nodes" not in top:
        raise NodesFileError(f"{path}:1: nodes: missing (a list of nodes, each with a host)")
    seq = top.pop("nodes")[0]
    if not isinstance(seq, yaml.SequenceNode) or not seq.value:
        raise NodesFileError(f"{path}:{seq.start_mark.line + 1}: nodes: a non-empty list")
    defaults = _check(top, "", path, base)
    nodes = []
    for i, item in enumerate(seq.value):
        where = f"nodes[{i}]"
        mine = _check(_fields(item, FIELDS, where, path), where, path, base)
        if "host" not in mine:
            raise NodesFileError(f"{path}:{item.start_mark.line + 1}: {where}.host: missing")
        merged = {k: v for k, v in defaults.items() if k in FIELDS} | mine
        if merged.get("key") is None and not merged.get("agent"):
            raise NodesFileError(
                f"{path}:{item.start_mark.line + 1}: {where}.key: missing (a key file, "
                "or agent: true to use the SSH agent)"
            )
        nodes.append(NodeSpec(name=node_name(i + 1), **merged))
    known = defaults.get("known_hosts") or Path("~/.ssh/known_hosts").expanduser()
    return NodesFile(
        path=path,
        nodes=tuple(nodes),
        known_hosts=known,
        accept_new_host_keys=bool(defaults.get("accept_new_host_keys", False)),
    )
