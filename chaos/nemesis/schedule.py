"""Scripted fault timelines from a YAML file (``chaos run lab3 --schedule FILE.yaml``).

    # every step: at <offset> <fault> [<target>] [for <duration>]
    schedule:
      - at 3s pause worker for 6s
      - at 10s partition halves for 5s
      - at: 12s                      # the same as a mapping, which also takes a custom grudge
        fault: partition
        grudge: {n1: [n2, n3]}       # or components: [[n1], [n2, n3]]
        for: 4s
    triggers:                        # optional: event triggers (see docs/nemesis.md)
      - pause worker on delivery for 4s

A file may also be just the list of steps. Offsets count from the start of the workload. Every
error names the file, the line and the field, from YAML's own node marks, so that a typo in a
long timeline is found at once.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from chaos.core.spec import DEFAULT_FAULT_SECONDS
from chaos.core.workload import Workload
from chaos.histories.files import read_input_text
from chaos.histories.limits import InputError
from chaos.nemesis.base import CustomGrudge
from chaos.nemesis.plan import Plain, Plan, Step, parse_duration
from chaos.nemesis.table import BY_NAME, FAULTS
from chaos.nemesis.trigger import TriggerError, bind, parse_trigger

STEP_FIELDS = ("at", "fault", "target", "for", "duration", "grudge")
_STEP = re.compile(
    r"^\s*at\s+(?P<at>\S+)\s+(?P<fault>[a-z][a-z-]*)(?:\s+(?P<target>(?!for\b)\S+))?"
    r"(?:\s+for\s+(?P<dur>\S+))?\s*$"
)


class ScheduleError(ValueError):
    """A schedule file that cannot be used; the message starts with ``file:line:``."""


class _Where:
    def __init__(self, file: str) -> None:
        self.file = file

    def err(self, node: yaml.Node | None, field: str | None, msg: str) -> ScheduleError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        what = f" field '{field}':" if field else ""
        return ScheduleError(f"{self.file}{line}:{what} {msg}")


def _scalar(where: _Where, node: yaml.Node, field: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise where.err(node, field, "expected a single value")
    return str(node.value)


def _duration(where: _Where, node: yaml.Node, field: str) -> float:
    try:
        return parse_duration(_scalar(where, node, field))
    except ValueError as e:
        raise where.err(node, field, str(e)) from None


def _plain(node: yaml.Node) -> Plain:
    """A node as plain data (for a grudge), without YAML's implicit typing of node names."""
    if isinstance(node, yaml.MappingNode):
        return {str(_plain(k)): _plain(v) for k, v in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v) for v in node.value]
    return str(node.value)


def _grudged() -> list[str]:
    """The faults a schedule may give a grudge (:class:`CustomGrudge`)."""
    return [n for n in FAULTS if isinstance(BY_NAME[n].make(None), CustomGrudge)]


def _check_fault(where: _Where, node: yaml.Node, fault: str) -> None:
    if fault not in FAULTS:
        raise where.err(node, "fault", f"unknown fault {fault!r}; faults: {', '.join(FAULTS)}")


def _step_from_text(where: _Where, node: yaml.Node, index: int, default: float) -> Step:
    text = _scalar(where, node, "step")
    m = _STEP.match(text)
    if not m:
        raise where.err(
            node,
            "step",
            f"expected 'at <offset> <fault> [<target>] [for <duration>]', got {text!r}",
        )
    _check_fault(where, node, m["fault"])
    try:
        at = parse_duration(m["at"])
    except ValueError as e:
        raise where.err(node, "at", str(e)) from None
    try:
        dur = parse_duration(m["dur"]) if m["dur"] else default
    except ValueError as e:
        raise where.err(node, "for", str(e)) from None
    return Step(
        at=at,
        fault=m["fault"],
        target=m["target"],
        duration=dur,
        source=f"{where.file}:{node.start_mark.line + 1}",
        index=index,
    )


def _step_from_map(where: _Where, node: yaml.MappingNode, index: int, default: float) -> Step:
    fields: dict[str, yaml.Node] = {}
    for k, v in node.value:
        key = _scalar(where, k, "step")
        if key not in STEP_FIELDS:
            raise where.err(k, key, f"unknown field; fields: {', '.join(STEP_FIELDS)}")
        if key in fields:
            raise where.err(k, key, "given twice")
        fields[key] = v
    for required in ("at", "fault"):
        if required not in fields:
            raise where.err(node, required, "missing")
    fault = _scalar(where, fields["fault"], "fault")
    _check_fault(where, fields["fault"], fault)
    at = _duration(where, fields["at"], "at")
    dur_node = fields.get("for", fields.get("duration"))
    dur = _duration(where, dur_node, "for") if dur_node is not None else default
    target = _scalar(where, fields["target"], "target") if "target" in fields else None
    grudge = None
    if "grudge" in fields:
        if fault not in _grudged():
            said = f"only a {' or a '.join(_grudged())} takes a grudge"
            raise where.err(fields["grudge"], "grudge", said)
        if target is not None:
            raise where.err(fields["grudge"], "grudge", "give a target or a grudge, not both")
        grudge = _plain(fields["grudge"])
        if not isinstance(grudge, dict | list) or not grudge:
            raise where.err(
                fields["grudge"],
                "grudge",
                "expected {node: [nodes it drops]} or [[component], ...]",
            )
    return Step(
        at=at,
        fault=fault,
        target=target,
        duration=dur,
        grudge=grudge,
        source=f"{where.file}:{node.start_mark.line + 1}",
        index=index,
    )


# A schedule is a few dozen lines nested three levels; these bounds are far past any real one.
MAX_SCHEDULE_BYTES = 1 << 20
MAX_SCHEDULE_DEPTH = 20


def _prescan(where: _Where, text: str) -> None:
    """Refuse what would make composing the document costly before composing it: aliases (a
    "billion laughs" grudge expands exponentially when read as data; a schedule never needs
    one) and deep nesting (PyYAML composes recursively). Walks the event stream, which is flat."""
    depth = 0
    for ev in yaml.parse(text):
        if isinstance(ev, yaml.AliasEvent):
            line = ev.start_mark.line + 1 if ev.start_mark else "?"
            raise ScheduleError(
                f"{where.file}:{line}: alias *{ev.anchor}: aliases are not allowed in a schedule"
            )
        if isinstance(ev, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_SCHEDULE_DEPTH:
                line = ev.start_mark.line + 1 if ev.start_mark else "?"
                raise ScheduleError(
                    f"{where.file}:{line}: nested deeper than {MAX_SCHEDULE_DEPTH} levels"
                )
        elif isinstance(ev, yaml.CollectionEndEvent):
            depth -= 1


def parse_schedule(
    text: str,
    *,
    file: str = "<schedule>",
    default_duration: float = DEFAULT_FAULT_SECONDS,
    workload: Workload | None = None,
    workload_name: str = "",
) -> Plan:
    """Parse a schedule document; raises ScheduleError naming file, line and field.

    With ``workload``, each trigger phrase must also name one of its hold points."""
    where = _Where(file)
    try:
        _prescan(where, text)
        root = yaml.compose(text)
    except yaml.MarkedYAMLError as e:
        line = f":{e.problem_mark.line + 1}" if e.problem_mark else ""
        raise ScheduleError(f"{file}{line}: not valid YAML: {e.problem}") from None
    except yaml.YAMLError as e:  # the reader's own errors (a control character) carry no mark
        raise ScheduleError(f"{file}: not valid YAML: {str(e).splitlines()[0]}") from None
    if root is None:
        raise ScheduleError(f"{file}: empty schedule")
    steps_node: yaml.Node | None = None
    triggers_node: yaml.Node | None = None
    if isinstance(root, yaml.SequenceNode):
        steps_node = root
    elif isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            key = _scalar(where, k, "top level")
            if key == "schedule":
                steps_node = v
            elif key == "triggers":
                triggers_node = v
            else:
                raise where.err(k, key, "unknown section; sections: schedule, triggers")
    else:
        raise where.err(root, None, "expected a list of steps or a mapping with 'schedule:'")
    steps: list[Step] = []
    if steps_node is not None:
        if not isinstance(steps_node, yaml.SequenceNode):
            raise where.err(steps_node, "schedule", "expected a list of steps")
        for i, item in enumerate(steps_node.value):
            if isinstance(item, yaml.MappingNode):
                steps.append(_step_from_map(where, item, i, default_duration))
            else:
                steps.append(_step_from_text(where, item, i, default_duration))
    triggers = (
        [] if triggers_node is None else _triggers(where, triggers_node, workload, workload_name)
    )
    if not steps and not triggers:
        raise ScheduleError(f"{file}: no steps and no triggers")
    return Plan(steps=tuple(steps), triggers=tuple(triggers), origin=file)


def _triggers(
    where: _Where, node: yaml.Node, workload: Workload | None, workload_name: str
) -> list[str]:
    """The ``triggers:`` section: phrases that parse (and, with ``workload``, bind to its hold
    points)."""
    if not isinstance(node, yaml.SequenceNode):
        raise where.err(node, "triggers", "expected a list of trigger phrases")
    triggers: list[str] = []
    for item in node.value:
        phrase = _scalar(where, item, "triggers")
        try:
            tr = parse_trigger(phrase)
            if workload is not None:
                bind(tr, workload, workload_name)
        except TriggerError as e:
            raise where.err(item, "triggers", str(e)) from None
        triggers.append(phrase)
    return triggers


def load_schedule(
    path: Path,
    *,
    default_duration: float = DEFAULT_FAULT_SECONDS,
    workload: Workload | None = None,
    workload_name: str = "",
) -> Plan:
    try:
        text = read_input_text(path, MAX_SCHEDULE_BYTES)
    except InputError as e:
        raise ScheduleError(str(e)) from None
    return parse_schedule(
        text,
        file=str(path),
        default_duration=default_duration,
        workload=workload,
        workload_name=workload_name,
    )
