"""Final reads that a loaded machine can make slow are tried again instead of read as an answer:
the broker's counts (lab3), a version of lab1's lock record (only a compacted history cuts it
short, never a timeout), and who leads etcd (a role asked again, not "nobody")."""

from __future__ import annotations

import types
from typing import Any

import pytest

from chaos.core.target import RoleUnplayed
from chaos.workloads.lab1 import final_state
from chaos.workloads.lab3 import workload as lab3
from chaos.workloads.systems import etcd, roles


def test_the_brokers_counts_are_read_again_after_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab3, "BROKER_READ_PAUSE", 0.0)
    calls: list[int] = []

    def read(url: str, messages: int = 0) -> dict[str, Any]:
        assert messages  # the final reads name the last messages' events (lost-publish-ack)
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("nats: timeout")
        return {"stream": {"messages": 3}}

    monkeypatch.setattr(lab3.broker, "read_broker", read)
    assert lab3._broker_state("nats://x") == {"stream": {"messages": 3}} and len(calls) == 3
    # every try failed: the last error is kept, for the checkers to name
    calls.clear()
    monkeypatch.setattr(lab3, "BROKER_READS", 2)
    assert lab3._broker_state("nats://x") == {"broker_error": "TimeoutError: nats: timeout"}


class Meta:
    def __init__(self, rev: int, version: int) -> None:
        self.mod_revision, self.version = rev, version


class LockClient:
    """The lock record at revision 30 (version 3), whose older versions fail with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get(self, key: str, revision: int | None = None) -> tuple[bytes, Meta]:
        if revision is None:
            return b'{"token": 3}', Meta(30, 3)
        raise self.error


def test_a_lock_history_is_cut_only_by_a_compacted_history() -> None:
    compacted = Exception(
        "status = StatusCode.OUT_OF_RANGE: mvcc: required revision has been compacted"
    )
    got = final_state.lock_history(LockClient(compacted), "/lab1/lock")
    assert got == [{"token": 3, "rev": 30}]
    # a timeout is no answer: raised, so the final reads are tried again
    with pytest.raises(TimeoutError):
        final_state.lock_history(LockClient(TimeoutError("deadline exceeded")), "/lab1/lock")


def test_a_leader_nobody_names_is_asked_again_not_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx: Any = types.SimpleNamespace(
        supervisor=types.SimpleNamespace(processes=lambda name=None: ["etcd@n1"])
    )
    monkeypatch.setattr(etcd, "leader", lambda ctx: None)
    with pytest.raises(RoleUnplayed, match="leader"):
        roles.system_role(ctx, "leader")
    monkeypatch.setattr(etcd, "leader", lambda ctx: "n2")
    (t,) = roles.system_role(ctx, "leader") or []
    assert (t.node, t.process) == ("n2", "etcd")
