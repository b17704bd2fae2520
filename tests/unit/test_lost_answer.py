"""lab3's lost-create-response is decided by chaos's own client (chaos.workloads.lab3.lost_answer):
armed, the next answered create is dropped and retried on the next node; nothing reaches the api."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.histories.jsonl import read_history
from chaos.workloads.lab3 import lost_answer, points, workload
from chaos.workloads.lab3.workload import Lab3
from tests.unit.test_fault_confirmation import _ctx


def test_an_armed_drop_takes_one_answer_then_the_client_retries_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, cluster = _ctx(tmp_path)
    sent: list[str] = []

    def post(address: str, value: dict[str, Any]) -> tuple[str, Any]:
        sent.append(address)
        return "ok", {"task_id": value["task_id"], "event_id": f"e-{len(sent)}"}

    monkeypatch.setattr(workload, "_post_task", post)
    monkeypatch.setattr(workload, "CREATE_RETRY_PAUSE", 0.0)
    lab = Lab3()
    gen = lab.arm_host_point(ctx, points.LOST_CREATE)
    lab._create(ctx, 0, cluster.nodes[0], "t1", 5)
    lab._create(ctx, 1, cluster.nodes[0], "t2", 3)  # disarmed by the firing: answered
    fired = lab.host_point_fired(ctx, points.LOST_CREATE, gen)
    assert [(f["node"], f["task_id"]) for f in fired] == [(cluster.nodes[0], "t1")]
    assert [cluster.address(n) for n in cluster.nodes[:2]] == sent[:2] and len(sent) == 3
    ops = [o for o in read_history(ctx.run_dir / "history.jsonl").records if o.type == "ok"]
    t1 = next(o for o in ops if o.value["task_id"] == "t1")
    # the dropped attempt is in the op as an unanswered one: what the scenario's proof reads
    assert t1.extra["node"] == cluster.nodes[1]
    assert t1.extra["retried"] == [
        {"node": cluster.nodes[0], "outcome": "indeterminate", "error": lost_answer.ERROR}
    ]
    t2 = next(o for o in ops if o.value["task_id"] == "t2")
    assert "retried" not in t2.extra


def test_disarmed_nothing_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, cluster = _ctx(tmp_path)
    monkeypatch.setattr(workload, "_post_task", lambda a, v: ("ok", {"event_id": "e"}))
    lab = Lab3()
    gen = lab.arm_host_point(ctx, points.LOST_CREATE)
    lab.disarm_host_point(ctx, points.LOST_CREATE)
    lab._create(ctx, 0, cluster.nodes[0], "t1", 5)
    assert lab.host_point_fired(ctx, points.LOST_CREATE, gen) == []
