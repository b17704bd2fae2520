"""lab3's model of one run, built once and read by every checker (chaos.workloads.lab3.checkers).

A run is its spec, its history (the client's creates and the nemesis's ops), the services' events
and the final state chaos read from etcd and the broker. From them, each once:

- ``faults``     the fault intervals of the history (chaos.checkers.faults);
- ``crashes``    the crashes the host made at fault points and saw (their heal ops);
- ``creates``    what the orchestrator's own client asked for: each task's amount, and which
                 creates were accepted (``ok``) or indeterminate (``info`` or never completed);
- ``record``     etcd's record of the run when it is whole (None, with ``record_problem``
                 saying why, when it is missing, failed, cut or unanchored);
- ``outbox``     each task's event ids as its outbox entries were first written (by the record);
- ``applies``    the counter's story: each change attributed to a task (by the record);
- ``created`` / ``completed``  the tasks whose record some transaction wrote, or wrote completed;
- ``journal``    the nodes' etcd-proxy journals.

Each part is computed on first use and kept, so a check computes each once, and a part that cannot
be built from a malformed run fails only the checkers that read it (``check_safe`` makes those
``unknown``). Checkers only read the parts: the record's parts are shared by every checker of the
check (``tests/unit/test_lab3_model.py`` checks that a check leaves them as it found them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from chaos.checkers.faults import FaultInterval, fault_intervals
from chaos.checkers.journal import Journal, read_journal
from chaos.histories.ops import Event, Op, OpType, pair_index
from chaos.histories.store import StoredRun
from chaos.workloads.lab3 import record as by_record
from chaos.workloads.systems import record_values


def host_crashes(history: Sequence[Op]) -> list[dict[str, Any]]:
    """The crashes the host made at fault points and saw (their heal ops), for the chains."""
    return [
        op.value
        for op in history
        if op.extra.get("phase") == "heal"
        and isinstance(op.value, dict)
        and op.value.get("exit_seen_at") is not None
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class Creates:
    """The client's creates, read once from the history.

    ``accepted``/``undecided`` are every create's task, whatever its amount (``lost-tasks``);
    ``amounts``/``ok``/``maybe`` only those whose amount is a number (the counter's sums): a
    create that ended ``info`` or never completed is accepted only if etcd shows its task record.
    """

    amounts: dict[str, int]
    ok: frozenset[str]
    maybe: frozenset[str]
    accepted: frozenset[str]
    undecided: frozenset[str]


def _amount(value: Any) -> int | None:
    """A create's amount, when its value is an object whose amount reads as a number."""
    if not isinstance(value, dict):
        return None
    try:
        return int(value.get("amount", 0))
    except (TypeError, ValueError):
        return None


def creates_of(history: Sequence[Op]) -> Creates:
    """One walk over the create invokes and their completions."""
    ops = list(history)
    pairs = pair_index(ops)
    amounts: dict[str, int] = {}
    ok: set[str] = set()
    maybe: set[str] = set()
    accepted: set[str] = set()
    undecided: set[str] = set()
    for pos, op in enumerate(ops):
        if op.f != "create" or op.type is not OpType.INVOKE:
            continue
        value = op.value if isinstance(op.value, dict) else {}
        task_id = str(value.get("task_id"))
        comp = ops[pairs[pos]] if pos in pairs else None
        done = comp is not None and comp.type is OpType.OK
        unsure = comp is None or comp.type is OpType.INFO
        if done:
            accepted.add(task_id)
        elif unsure:
            undecided.add(task_id)
        amount = _amount(op.value)
        if amount is None:
            continue
        amounts[task_id] = amount
        if done:
            ok.add(task_id)
        elif unsure:
            maybe.add(task_id)
    return Creates(
        amounts=amounts,
        ok=frozenset(ok),
        maybe=frozenset(maybe - ok),
        accepted=frozenset(accepted),
        undecided=frozenset(undecided - accepted),
    )


@dataclass(frozen=True, kw_only=True)
class Lab3Run:
    """One lab3 run as its checkers read it: the stored parts, and what is derived from them,
    each derived once (on first use). Build it with :func:`model_of`."""

    spec: Mapping[str, Any]
    history: Sequence[Op]
    events: Sequence[Event]
    final: Mapping[str, Any] | None

    @cached_property
    def faults(self) -> tuple[FaultInterval, ...]:
        return tuple(fault_intervals(self.history))

    @cached_property
    def crashes(self) -> tuple[dict[str, Any], ...]:
        return tuple(host_crashes(self.history))

    @cached_property
    def creates(self) -> Creates:
        return creates_of(self.history)

    @cached_property
    def record_problem(self) -> str | None:
        """Why etcd's record cannot account for the run, or None when it can."""
        return record_values.unusable((self.final or {}).get("record"))

    @property
    def record(self) -> dict[str, Any] | None:
        """etcd's record of the run, when the final reads took all of it: without error, not cut
        at MAX_EVENTS, with the revision it starts from."""
        if self.record_problem is not None:
            return None
        rec: dict[str, Any] = (self.final or {})["record"]
        return rec

    @cached_property
    def outbox(self) -> dict[str, list[tuple[str, int]]] | None:
        rec = self.record
        return by_record.outbox_events(rec) if rec is not None else None

    @cached_property
    def applies(self) -> by_record.Applies | None:
        rec = self.record
        return by_record.applies(rec, self.creates.amounts) if rec is not None else None

    @cached_property
    def created(self) -> set[str] | None:
        rec = self.record
        return by_record.created_tasks(rec) if rec is not None else None

    @cached_property
    def completed(self) -> dict[str, int] | None:
        rec = self.record
        return by_record.completed_tasks(rec) if rec is not None else None

    @cached_property
    def journal(self) -> Journal | None:
        return read_journal(self.final)

    def no_final(self) -> str:
        """Why there is no final state, in words: the reads failed, or the run never got to
        them."""
        err = (self.final or {}).get("error")
        if err:
            return f"the final reads failed ({err})"
        return "no final state was read (the run ended before its final reads)"

    def record_missing(self) -> str:
        """Why there is no usable record, in words."""
        if (self.final or {}).get("error"):
            return self.no_final()
        return self.record_problem or "etcd's record of the run is complete"


def model_of(run: StoredRun) -> Lab3Run:
    return Lab3Run(
        spec=run.spec, history=tuple(run.history), events=tuple(run.events), final=run.final
    )
