"""The registries and capabilities the layers rest on: names derive from one table, workloads
declare what they can do, and every undo op a fault needs after a crash has a reaper."""

from __future__ import annotations

import pytest

from chaos.cluster import backends
from chaos.cluster.base import Freezable, Reapable
from chaos.cluster.docker.reap import HANDLED_OPS
from chaos.cluster.fake import FakeBackend, FakeCluster
from chaos.core.capabilities import (
    FaultPoints,
    HoldPoints,
    PauseTarget,
    RoleResolver,
    Scenarios,
    TxnPoints,
)
from chaos.nemesis import table
from chaos.nemesis.registry import parse_nemesis
from chaos.nemesis.trigger import TriggerError, parse_trigger
from chaos.workloads import registry


def test_every_undo_op_the_fault_table_names_has_a_reaper() -> None:
    assert table.REAP_OPS <= HANDLED_OPS, table.REAP_OPS - HANDLED_OPS


def test_nemesis_names_and_trigger_faults_come_from_the_table() -> None:
    assert [n for n, _ in parse_nemesis(table.FAULTS)] == list(table.FAULTS)
    for fault in table.TRIGGER_FAULTS:
        assert parse_trigger(f"{fault} worker on delivery").fault == fault
    with pytest.raises(TriggerError, match="unknown fault"):
        parse_trigger("melt worker on delivery")


def test_workloads_declare_their_capabilities() -> None:
    lab3, lab1 = registry.get("lab3"), registry.get("lab1")
    assert isinstance(lab3, FaultPoints) and isinstance(lab3, Scenarios)
    # the seed's three scenarios are fault points; the other points are faults to aim
    assert list(lab3.scenarios) == list(lab3.fault_points)[:3]
    assert set(lab3.fault_points) - set(lab3.scenarios) == {
        "lost-create-response",
        "txn-error-complete",
        "txn-error-create",
    }
    assert not isinstance(lab1, FaultPoints) and not isinstance(lab1, Scenarios)
    for wl in (lab3, lab1):
        assert isinstance(wl, HoldPoints) and isinstance(wl, PauseTarget)
        assert isinstance(wl, TxnPoints)
    for name in registry.names():
        assert isinstance(registry.get(name), RoleResolver), name
    with pytest.raises(
        ValueError, match="unknown workload 'lab2'; known: etcd-append, etcd-register"
    ):
        registry.get("lab2")


def test_backends_by_name_and_the_fake_one() -> None:
    assert "docker" in backends.names() and backends.DEFAULT == "docker"
    assert "ssh" in backends.names()
    with pytest.raises(ValueError, match="unknown backend 'vagrant'"):
        backends.get("vagrant")
    with pytest.raises(ValueError, match="backend docker takes no --nodes"):
        backends.get("docker", nodes_file="nodes.yaml")
    with pytest.raises(ValueError, match="the ssh backend needs --nodes-file FILE"):
        backends.get("ssh")
    fake = FakeBackend().make_cluster(run_id="r", nodes=2, live_dir=None, mounts={})  # type: ignore[arg-type]
    assert isinstance(fake, FakeCluster) and fake.nodes == ["n1", "n2"]
    assert isinstance(fake, Freezable) and isinstance(fake, Reapable)


def test_no_reader_of_faults_tells_one_from_another_by_name() -> None:
    """A fault is its row (issue 33): what its process does, its verb, colour and undo are read
    from the table or the record, so no module compares a fault's name with a literal (the
    checkers' frozen reading of old records, ``RECORDED_BEFORE``, is a table, not a comparison)."""
    import ast
    from pathlib import Path

    root = Path(table.__file__).resolve().parents[1]
    names = {k.name for k in table.KINDS}
    readers = [
        *sorted((root / "nemesis").glob("*.py")),
        root / "checkers" / "faults.py",
        *sorted((root / "report").glob("*.py")),
        *sorted((root / "cluster").rglob("*.py")),
        *sorted((root / "workloads").glob("*/model.py")),
        *sorted((root / "workloads").glob("*/checkers/*.py")),
    ]
    found = []
    for path in readers:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                for v in values:
                    if isinstance(v, ast.Constant) and v.value in names:
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {v.value!r}")
    assert not found, found
