"""The grade matrix: the configurations every submission is run under (``grade.yaml``).

    defaults:                 # optional: `chaos run` options every configuration starts from
      time-limit: 20
    configs:
      - name: pause           # a column of the class table: letters, digits, - _ .
        weight: 2             # optional, default 1: its share of a student's score
        run:                  # the `chaos run` options it sets (long names, without --)
          nemesis: pause
      - name: crash-before-ack
        run: {nemesis: worker-crash-before-ack, option: {KEY: VALUE}}

Option names are ``chaos run``'s long options; a repeatable one (``trigger``) takes a list,
``option`` takes a mapping (each pair becomes ``-o KEY=VALUE``), ``schedule`` a path relative to
the matrix file. A workload option written as a key of its own (``ack-wait: 1``, as when it was a
`chaos run` option) is read as that ``option`` pair. Options that belong to the grading itself (seed, solution, store, ...) are
refused, and so is an ``option`` the workload does not declare, or a value it does not accept
(chaos.core.options), so a typo stops the grade before any run. Every error names the file, the
line and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from chaos.core import options as workload_options
from chaos.core import run_options
from chaos.core.options import WorkloadOption
from chaos.core.spec import TestSpec
from chaos.histories.files import read_input_text
from chaos.histories.limits import InputError
from chaos.histories.yaml_input import compose

# `chaos run`'s options a configuration may set, with the type of their value, and those the
# grading sets itself, with why: both read from the options' declarations
# (chaos.core.run_options), where each says whether a matrix may set it. A unit test holds these
# against the run command's own options.
OPTIONS: dict[str, type] = {
    o.key: o.kind() for o in run_options.command_options("run") if not o.matrix
}
REFUSED: dict[str, str] = {
    **{o.key: o.matrix for o in run_options.command_options("run") if o.matrix},
    # the deprecated spellings of refused options (chaos.cli.deprecation)
    "lab-report": "one configuration is one run",  # of --scenarios all
    "report": "the grade writes its own report",  # of --lab-report-out
}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# `chaos run`'s defaults (TestSpec's), for a run's time bound when a configuration leaves them out
RUN_DEFAULTS = TestSpec(workload="-")


# a matrix is a page of YAML
MAX_MATRIX_BYTES = 1 << 20


class MatrixError(ValueError):
    """A malformed matrix: ``FILE:LINE: FIELD: what is wrong``."""


@dataclass(frozen=True, slots=True)
class Config:
    """One configuration: a column of the class table."""

    name: str
    weight: float = 1.0
    # option name -> value, after defaults; JSON-able (paths as strings)
    options: Mapping[str, Any] = field(default_factory=dict)

    def argv(self) -> list[str]:
        """The `chaos run` options, in the order written."""
        out: list[str] = []
        for key, value in self.options.items():
            if key == "option":
                for k, v in value.items():
                    out += ["-o", f"{k}={_scalar(v)}"]
            elif key == "trigger":
                for t in value:
                    out += ["--trigger", str(t)]
            else:
                out += [f"--{key}", _scalar(value)]
        return out

    def time_bound(self) -> float:
        """Seconds a run of this configuration may take by its own bounds (workload + recovery),
        without bring-up, teardown and checking."""
        return float(self.options.get("time-limit", RUN_DEFAULTS.time_limit)) + float(
            self.options.get("recovery-timeout", RUN_DEFAULTS.recovery_timeout)
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight, "run": dict(self.options)}


@dataclass(frozen=True, slots=True)
class Matrix:
    configs: tuple[Config, ...]
    source: str = ""

    def names(self) -> list[str]:
        return [c.name for c in self.configs]

    def get(self, name: str) -> Config:
        for c in self.configs:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "configs": [c.to_json() for c in self.configs]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Matrix:
        return Matrix(
            configs=tuple(
                Config(name=c["name"], weight=float(c["weight"]), options=dict(c["run"]))
                for c in d["configs"]
            ),
            source=str(d.get("source", "")),
        )


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class _Reader:
    """Turns YAML nodes into values, remembering where each came from for the error message."""

    def __init__(
        self, path: Path, workload: str = "", declared: Sequence[WorkloadOption] | None = None
    ) -> None:
        self.path = path
        self.workload = workload
        self.declared = declared  # None: the workload's options are not checked here

    def fail(self, node: yaml.Node | None, where: str, what: str) -> MatrixError:
        line = node.start_mark.line + 1 if node is not None else 1
        return MatrixError(f"{self.path}:{line}: {where}: {what}")

    def mapping(self, node: yaml.Node, where: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, where, "expected a mapping (key: value lines)")
        out: list[tuple[str, yaml.Node, yaml.Node]] = []
        seen: set[str] = set()
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise self.fail(k, where, "keys must be plain names")
            if k.value in seen:
                raise self.fail(k, f"{where}.{k.value}" if where else k.value, "given twice")
            seen.add(k.value)
            out.append((k.value, k, v))
        return out

    def scalar(self, node: yaml.Node, where: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, where, "expected a single value")
        return yaml.safe_load(yaml.serialize(node))

    def typed(self, node: yaml.Node, where: str, kind: type) -> Any:
        if kind is list:
            items = node.value if isinstance(node, yaml.SequenceNode) else [node]
            return [str(self.scalar(n, f"{where}[{i}]")) for i, n in enumerate(items)]
        if kind is dict:
            out = {}
            for key, _, v in self.mapping(node, where):
                val = self.scalar(v, f"{where}.{key}")
                if val is None or isinstance(val, list | dict):
                    raise self.fail(v, f"{where}.{key}", "expected a value")
                out[key] = val
            return out
        value = self.scalar(node, where)
        if kind is str:
            if isinstance(value, list | dict) or value is None:
                raise self.fail(node, where, "expected text")
            return str(value)
        if kind is Path:
            if not isinstance(value, str) or not value:
                raise self.fail(node, where, "expected a file path")
            p = Path(value)
            return str(p if p.is_absolute() else (self.path.parent / p).resolve())
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(node, where, f"expected {'an integer' if kind is int else 'a number'}")
        if kind is int and not isinstance(value, int):
            raise self.fail(node, where, "expected an integer")
        if value < 0:
            raise self.fail(node, where, "must not be negative")
        return kind(value)

    def options(self, node: yaml.Node, where: str, config: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        moved: dict[str, Any] = {}  # workload options written as keys of their own
        declared = {o.name for o in self.declared or ()}
        for raw, knode, v in self.mapping(node, where):
            key = raw.replace("_", "-").removeprefix("--")
            here = f"{where}.{raw}"
            if key in REFUSED:
                raise self.fail(knode, here, f"not allowed in a matrix: {REFUSED[key]}")
            if key not in OPTIONS and key.replace("-", "_") in declared:
                name = key.replace("-", "_")
                moved[name] = self.scalar(v, here)
                self.check_option(name, moved[name], v, knode, here, config)
                continue
            if key not in OPTIONS:
                raise self.fail(
                    knode, here, f"not a `chaos run` option; known: {', '.join(sorted(OPTIONS))}"
                )
            out[key] = self.typed(v, here, OPTIONS[key])
            if key == "option":
                self.workload_options(v, here, config)
        if moved:  # an `option` pair written beside its own key wins
            out["option"] = {**moved, **out.get("option", {})}
        return out

    def workload_options(self, node: yaml.Node, where: str, config: str) -> None:
        """Each ``-o`` pair against the workload's declarations, as `chaos run` will check it."""
        for key, knode, v in self.mapping(node, where):
            self.check_option(key, self.scalar(v, key), v, knode, f"{where}.{key}", config)

    def check_option(
        self, key: str, value: Any, node: yaml.Node, knode: yaml.Node, where: str, config: str
    ) -> None:
        """One ``-o`` pair against the workload's declarations (nothing without them)."""
        if self.declared is None:
            return
        try:
            workload_options.parse(self.workload, self.declared, {key: _scalar(value)})
        except ValueError as e:
            bad = node if key in {o.name for o in self.declared} else knode
            named = f"configuration {config}: " if config else ""
            raise self.fail(bad, where, f"{named}{e}") from None


def parse(
    text: str,
    path: Path,
    workload: str = "",
    declared: Sequence[WorkloadOption] | None = None,
) -> Matrix:
    """Parse a matrix; MatrixError names file, line and field of the first problem. With the
    workload's ``declared`` options, each configuration's ``option`` pairs are checked too."""
    r = _Reader(path, workload, declared)
    try:
        root = compose(path, text)
    except InputError as e:
        raise MatrixError(str(e)) from None
    if root is None:
        raise MatrixError(f"{path}:1: configs: missing (the file is empty)")
    defaults: dict[str, Any] = {}
    configs_node: yaml.Node | None = None
    for key, knode, v in r.mapping(root, ""):
        if key == "defaults":
            defaults = r.options(v, "defaults")
        elif key == "configs":
            configs_node = v
        else:
            raise r.fail(knode, key, "unknown key; a matrix has `configs` and optional `defaults`")
    if configs_node is None:
        raise r.fail(root, "configs", "missing: the list of configurations")
    if not isinstance(configs_node, yaml.SequenceNode) or not configs_node.value:
        raise r.fail(configs_node, "configs", "expected a non-empty list of configurations")
    configs: list[Config] = []
    for i, item in enumerate(configs_node.value):
        where = f"configs[{i}]"
        fields = {k: (kn, v) for k, kn, v in r.mapping(item, where)}
        for k, (kn, _) in fields.items():
            if k not in ("name", "weight", "run"):
                raise r.fail(
                    kn, f"{where}.{k}", "unknown field; a configuration has name, weight, run"
                )
        if "name" not in fields:
            raise r.fail(item, f"{where}.name", "missing")
        name = r.scalar(fields["name"][1], f"{where}.name")
        if not isinstance(name, str) or not NAME.match(name):
            raise r.fail(fields["name"][1], f"{where}.name", "letters, digits, - _ . (at most 64)")
        if name in {c.name for c in configs}:
            raise r.fail(fields["name"][1], f"{where}.name", f"{name!r} is used twice")
        weight = 1.0
        if "weight" in fields:
            weight = r.typed(fields["weight"][1], f"{where}.weight", float)
            if weight <= 0:
                raise r.fail(fields["weight"][1], f"{where}.weight", "must be above 0")
        run = r.options(fields["run"][1], f"{where}.run", name) if "run" in fields else {}
        options = {**defaults, **run}
        if "option" in defaults and "option" in run:  # -o pairs add up; the configuration's win
            options["option"] = {**defaults["option"], **run["option"]}
        configs.append(Config(name=name, weight=weight, options=options))
    return Matrix(configs=tuple(configs), source=str(path))


def load(
    path: Path, workload: str = "", declared: Sequence[WorkloadOption] | None = None
) -> Matrix:
    try:
        text = read_input_text(path, MAX_MATRIX_BYTES)
    except InputError as e:
        raise MatrixError(str(e)) from None
    return parse(text, path, workload, declared)
