"""What etcd's own record says lab3's code under test did: every change of the counter, each
attributed to the task whose keys the same transaction wrote.

Pure functions of a stored run (``final.json`` → ``record``, see
:mod:`chaos.workloads.systems.etcd_record`) and of the amounts the client asked for (read once
by ``chaos.workloads.lab3.model``). Nothing here reads what the service reported about itself: the verdicts that rest on this module cannot be talked into
"valid" by a solution's events, results or return values.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from chaos.workloads.lab3 import keys
from chaos.workloads.systems import record_values
from chaos.workloads.systems.record_values import Finding


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One transaction that changed the counter."""

    revision: int
    before: int
    after: int
    tasks: tuple[str, ...]  # tasks whose keys the same transaction wrote
    keys: tuple[str, ...]

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass(slots=True, kw_only=True)
class Applies:
    """The counter's story by the record: which task was applied at which revisions, and every
    revision the walk could not interpret."""

    start: int | None = None
    final: int | None = None
    changes: list[Change] = field(default_factory=list)
    by_task: dict[str, list[int]] = field(default_factory=dict)  # task -> revisions
    unexplained: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    revisions: int = 0  # transactions interpreted

    @property
    def counter_findings(self) -> list[Finding]:
        """The findings that leave the counter's story unreadable (its writes refused, deleted)."""
        return [
            f for f in self.findings if f.key == keys.COUNTER and f.kind != "unexplained-change"
        ]


def _task_of(key: str, event_tasks: dict[str, str]) -> str | None:
    for prefix in (keys.RESULTS_PREFIX, keys.TASKS_PREFIX, keys.PREFIX + "idem/"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    if key.startswith(keys.DEDUP_PREFIX):
        return event_tasks.get(key[len(keys.DEDUP_PREFIX) :])
    return None


# the shapes of lab3's keys (chaos.workloads.lab3.keys): anything else under the prefix is foreign
_SHAPES = {
    keys.TASKS_PREFIX: "task",
    keys.PREFIX + "idem/": "idempotency record",
    keys.OUTBOX_PREFIX: "outbox entry",
    keys.PREFIX + "outbox-claim/": "outbox claim",
    keys.DEDUP_PREFIX: "dedup record",
    keys.RESULTS_PREFIX: "result",
}


def shape_of(key: str) -> str | None:
    """What a key under lab3's prefix is (``counter``, ``task``, ...), or None when it matches no
    key of the layout."""
    if key == keys.COUNTER:
        return "counter"
    for prefix, shape in _SHAPES.items():
        rest = key[len(prefix) :]
        if key.startswith(prefix) and rest and "/" not in rest:
            return shape
    return None


def _value_problem(shape: str, value: Any) -> str | None:
    """Why a value cannot be read as its key's shape, for the keys whose content a checker reads."""
    marker = record_values.unread(value)
    if marker is not None:
        return marker
    if shape == "counter":
        return record_values.int_problem(value)
    if shape == "task" and not (isinstance(value, dict) and isinstance(value.get("status"), str)):
        return "not a task record (a JSON object with a status)"
    if shape == "outbox entry" and not (
        isinstance(value, dict) and isinstance(value.get("task_id"), str)
    ):
        return "not an outbox entry (a JSON object with a task_id)"
    return None


def _interpret(rev: int, txn: dict[str, Any], out: Applies) -> None:
    """Every key a transaction wrote or deleted: a known shape with a readable value, or a
    finding."""
    for key in txn.get("deletes") or []:
        shape = shape_of(key)
        if shape == "outbox claim":
            continue  # a relay's claim is leased: it expires or is revoked
        if shape is None:
            out.findings.append(_foreign(rev, key, "deleted"))
            continue
        what = "the counter" if shape == "counter" else f"{key} (a {shape})"
        out.findings.append(
            Finding(
                revision=rev,
                key=key,
                kind="deleted",
                why=f"rev {rev} deleted {what}: lab3 keeps its records for the whole run, and a "
                "deleted record hides what was applied"
                + (
                    " (the next read of the counter starts again from 0)"
                    if shape == "counter"
                    else ""
                ),
            )
        )
    for key, value in (txn.get("puts") or {}).items():
        shape = shape_of(key)
        if shape is None:
            out.findings.append(_foreign(rev, key, "wrote"))
            continue
        problem = _value_problem(shape, value)
        if problem is not None:
            what = "the counter" if shape == "counter" else f"{key} (a {shape})"
            out.findings.append(
                Finding(
                    revision=rev,
                    key=key,
                    kind="unreadable" if shape == "counter" else "shape",
                    why=f"rev {rev} wrote {what} as {record_values.describe(value)}: {problem}",
                )
            )


def _foreign(rev: int, key: str, did: str) -> Finding:
    return Finding(
        revision=rev,
        key=key,
        kind="foreign-key",
        why=f"rev {rev} {did} {key}, which is no key of lab3's layout (counter, tasks/, idem/, "
        "outbox/, outbox-claim/, dedup/, results/): state kept beside the lab's records cannot "
        "be accounted for",
    )


def created_tasks(record: dict[str, Any]) -> set[str]:
    """Tasks whose task record some transaction wrote (the system accepted them)."""
    out: set[str] = set()
    for txn in record.get("txns") or []:
        for key in txn.get("puts") or {}:
            if key.startswith(keys.TASKS_PREFIX):
                out.add(key[len(keys.TASKS_PREFIX) :])
    return out


def outbox_events(record: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    """Each task's event ids as its outbox entries were first written: ``(event_id, revision)``
    in revision order. One task, one event id is the lab's promise for creates and retries."""
    out: dict[str, list[tuple[str, int]]] = {}
    seen: set[str] = set()
    for txn in record.get("txns") or []:
        rev = int(txn.get("revision", 0))
        for key, value in (txn.get("puts") or {}).items():
            if not key.startswith(keys.OUTBOX_PREFIX) or not isinstance(value, dict):
                continue
            event_id = key[len(keys.OUTBOX_PREFIX) :]
            if event_id in seen:
                continue
            seen.add(event_id)
            out.setdefault(str(value.get("task_id")), []).append((event_id, rev))
    return out


def applies(record: dict[str, Any], amounts: Mapping[str, int]) -> Applies:
    """Walk the record's transactions: interpret every write (findings for those no rule of the lab
    explains) and attribute every change of the counter to the task whose keys the same
    transaction wrote, when its amount is the change."""
    out = Applies()
    event_tasks: dict[str, str] = {}
    from_rev = record.get("from_revision")
    counter: int | None = 0  # the orchestrator writes 0 before the services start
    for txn in record.get("txns") or []:
        puts: dict[str, Any] = txn.get("puts") or {}
        rev = int(txn.get("revision", 0))
        out.revisions += 1
        _interpret(rev, txn, out)
        for key, value in puts.items():
            if key.startswith(keys.OUTBOX_PREFIX) and isinstance(value, dict):
                event_tasks[key[len(keys.OUTBOX_PREFIX) :]] = str(value.get("task_id"))
        if keys.COUNTER in (txn.get("deletes") or []):
            counter = 0  # what the next read finds (a finding already names the delete)
        if keys.COUNTER not in puts:
            continue
        new = record_values.as_int(puts[keys.COUNTER])
        if new is None:
            counter = None  # refused (a finding names it): the next change cannot be measured
            continue
        if rev == from_rev and out.start is None:
            out.start = counter = new  # the orchestrator's own first write
            continue
        if out.start is None:
            out.start = 0
        if counter is None or new == counter:
            counter = new
            continue
        tasks = tuple(sorted({t for k in puts if (t := _task_of(k, event_tasks)) is not None}))
        change = Change(
            revision=rev, before=counter, after=new, tasks=tasks, keys=tuple(sorted(puts))
        )
        out.changes.append(change)
        counter = new
        known = [t for t in tasks if t in amounts]
        if known and sum(amounts[t] for t in known) == change.delta:
            for t in known:
                out.by_task.setdefault(t, []).append(rev)
            continue
        _unexplained(out, change, known, amounts)
    out.final = counter
    if out.start is None:
        out.start = 0
    return out


def _unexplained(
    out: Applies, change: Change, known: list[str], amounts: Mapping[str, int]
) -> None:
    """A counter change no task's amount explains: kept, and named in a finding."""
    rev, tasks = change.revision, change.tasks
    out.unexplained.append(
        {
            "revision": rev,
            "delta": change.delta,
            "tasks": list(tasks),
            "keys": list(change.keys),
        }
    )
    if not tasks:
        why = "in a transaction that wrote no task's keys"
    elif known:
        listed = ", ".join(f"{t}'s is {amounts[t]:+d}" for t in known)
        why = f"in a transaction that wrote the keys of {', '.join(tasks)}, but {listed}"
    else:
        why = f"in a transaction that wrote the keys of {', '.join(tasks)}, no task the client created"
    out.findings.append(
        Finding(
            revision=rev,
            key=keys.COUNTER,
            kind="unexplained-change",
            why=f"rev {rev} changed the counter by {change.delta:+d} ({change.before} → "
            f"{change.after}) {why}",
        )
    )


def completed_tasks(record: dict[str, Any]) -> dict[str, int]:
    """Tasks whose task record some transaction wrote as completed, with the first such revision."""
    out: dict[str, int] = {}
    for txn in record.get("txns") or []:
        for key, value in (txn.get("puts") or {}).items():
            if (
                key.startswith(keys.TASKS_PREFIX)
                and isinstance(value, dict)
                and value.get("status") == "completed"
            ):
                out.setdefault(key[len(keys.TASKS_PREFIX) :], int(txn.get("revision", 0)))
    return out


def expected_total(
    amounts: Mapping[str, int], ok: Set[str], maybe: Set[str], created: Set[str]
) -> tuple[int, list[str]]:
    """The counter every accepted task adds up to, and the accepted tasks (sorted)."""
    accepted = sorted(ok | {t for t in maybe if t in created})
    return sum(amounts[t] for t in accepted), accepted
