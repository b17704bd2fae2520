"""The etcd key layout of lab3, shared by the services, the solutions and the final reads."""

from __future__ import annotations

PREFIX = "/lab3/"
COUNTER = PREFIX + "counter"
STREAM = "TASKS"
SUBJECT = "tasks.created"
CONSUMER = "workers"


def task(task_id: str) -> str:
    return f"{PREFIX}tasks/{task_id}"


def idempotency(task_id: str) -> str:
    return f"{PREFIX}idem/{task_id}"


def outbox(event_id: str) -> str:
    return f"{PREFIX}outbox/{event_id}"


def outbox_claim(event_id: str) -> str:
    return f"{PREFIX}outbox-claim/{event_id}"


def dedup(event_id: str) -> str:
    return f"{PREFIX}dedup/{event_id}"


def result(task_id: str) -> str:
    return f"{PREFIX}results/{task_id}"


OUTBOX_PREFIX = PREFIX + "outbox/"
TASKS_PREFIX = PREFIX + "tasks/"
DEDUP_PREFIX = PREFIX + "dedup/"
RESULTS_PREFIX = PREFIX + "results/"
