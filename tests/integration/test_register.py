"""etcd-register and jetstream-queue on the real systems (issue 6's workloads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.histories import edn
from chaos.histories.jsonl import read_history
from tests.integration.conftest import chaos, run_dir_from

pytestmark = pytest.mark.integration


def test_etcd_register_under_partition_checks_and_its_edn_loads_back_identically(
    store: Path,
) -> None:
    p = chaos("run", "etcd-register", "--nemesis", "partition:one", "--nemesis-interval", "2",
              "--time-limit", "8", "--seed", "3", store=store)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    run = run_dir_from(p)
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    lin = results["linearizable-cas-register"]
    assert lin["verdict"] == "valid" and "ops over" in lin["summary"]
    jsonl = read_history(run / "history.jsonl")
    assert jsonl.problems == []
    assert any(o.extra.get("fault") == "partition" for o in jsonl.records)
    assert any(o.f == "cas" for o in jsonl.records) and any(o.f == "read" for o in jsonl.records)
    back, problems = edn.read_history(run / "history.edn")
    assert problems == []
    assert len(back) == len(jsonl.records)
    for a, b in zip(jsonl.records, back, strict=True):
        assert (a.index, a.process, a.type, a.f) == (b.index, b.process, b.type, b.f)
        assert a.value == b.value or (isinstance(a.value, list) and list(a.value) == list(b.value))
        assert abs(a.time - b.time) < 1e-6
    # and chaos checks the EDN copy to the same verdict, as Knossos would be asked to
    again = chaos(
        "check", str(run / "history.edn"), "--model", "cas-register", "--independent", store=None
    )  # [key value] pairs: keys split when asked (Knossos' independent)
    assert again.returncode == 0, again.stdout + again.stderr


def test_jetstream_queue_under_pause_of_the_broker_loses_nothing(store: Path) -> None:
    p = chaos("run", "jetstream-queue", "--nemesis", "pause", "--pause-duration", "2",
              "--nemesis-interval", "2", "--time-limit", "6", "--seed", "3", store=store)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    run = run_dir_from(p)
    results = {r["checker"]: r for r in json.loads((run / "results.json").read_text())["results"]}
    tq = results["total-queue"]
    assert tq["verdict"] == "valid" and "acknowledged enqueues came out" in tq["summary"]
    hist = read_history(run / "history.jsonl").records
    pauses = [
        o for o in hist if o.extra.get("fault") == "pause" and o.extra.get("phase") == "start"
    ]
    assert pauses and pauses[-1].value["process"] == "nats"
