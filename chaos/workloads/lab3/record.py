"""What etcd's own record says lab3's code under test did: every change of the counter, each
attributed to the task whose keys the same transaction wrote.

Pure functions of a stored run (``final.json`` → ``record``, see
:mod:`chaos.workloads.systems.etcd_record`) and of the client's history. Nothing here reads what
the service reported about itself: the verdicts that rest on this module cannot be talked into
"valid" by a solution's events, results or return values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaos.histories.ops import Op, OpType, pair_index
from chaos.workloads.lab3 import keys


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
    """The counter's story by the record: which task was applied at which revisions."""

    start: int | None = None
    final: int | None = None
    changes: list[Change] = field(default_factory=list)
    by_task: dict[str, list[int]] = field(default_factory=dict)  # task -> revisions
    unexplained: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def client_amounts(history: list[Op]) -> tuple[dict[str, int], set[str], set[str]]:
    """What the client asked for: amount by task id, the accepted (``ok``) tasks, and the
    indeterminate ones (``info`` or never completed), which are accepted only if etcd shows
    their task record."""
    pairs = pair_index(history)
    amounts: dict[str, int] = {}
    ok: set[str] = set()
    maybe: set[str] = set()
    for pos, op in enumerate(history):
        if op.f != "create" or op.type is not OpType.INVOKE or not isinstance(op.value, dict):
            continue
        task_id = str(op.value.get("task_id"))
        try:
            amounts[task_id] = int(op.value.get("amount", 0))
        except (TypeError, ValueError):
            continue
        comp = history[pairs[pos]] if pos in pairs else None
        if comp is not None and comp.type is OpType.OK:
            ok.add(task_id)
        elif comp is None or comp.type is OpType.INFO:
            maybe.add(task_id)
    return amounts, ok, maybe - ok


def _task_of(key: str, event_tasks: dict[str, str]) -> str | None:
    for prefix in (keys.RESULTS_PREFIX, keys.TASKS_PREFIX, keys.PREFIX + "idem/"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    if key.startswith(keys.DEDUP_PREFIX):
        return event_tasks.get(key[len(keys.DEDUP_PREFIX) :])
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


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


def applies(record: dict[str, Any], amounts: dict[str, int]) -> Applies:
    """Walk the record's transactions and attribute every change of the counter."""
    out = Applies()
    event_tasks: dict[str, str] = {}
    counter: int | None = None
    for txn in record.get("txns") or []:
        puts: dict[str, Any] = txn.get("puts") or {}
        rev = int(txn.get("revision", 0))
        for key, value in puts.items():
            if key.startswith(keys.OUTBOX_PREFIX) and isinstance(value, dict):
                event_tasks[key[len(keys.OUTBOX_PREFIX) :]] = str(value.get("task_id"))
        if keys.COUNTER in (txn.get("deletes") or []):
            out.problems.append(f"the counter was deleted at revision {rev}")
            counter = None
            continue
        if keys.COUNTER not in puts:
            continue
        new = _as_int(puts[keys.COUNTER])
        if new is None:
            out.problems.append(f"the counter was set to {puts[keys.COUNTER]!r} at revision {rev}")
            continue
        if counter is None:
            if out.start is None:
                out.start = new
            counter = new
            continue
        if new == counter:
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
        else:
            out.unexplained.append(
                {
                    "revision": rev,
                    "delta": change.delta,
                    "tasks": list(tasks),
                    "keys": list(change.keys),
                }
            )
    out.final = counter
    return out


def expected_total(
    amounts: dict[str, int], ok: set[str], maybe: set[str], created: set[str]
) -> tuple[int, list[str]]:
    """The counter every accepted task adds up to, and the accepted tasks (sorted)."""
    accepted = sorted(ok | {t for t in maybe if t in created})
    return sum(amounts[t] for t in accepted), accepted
