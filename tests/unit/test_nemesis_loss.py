"""Lossy links on the in-memory cluster: specs, links, the rules in the run's chain and their heal.
The real rules and the probe that measures them are in tests/integration/test_clock_loss.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chaos.cluster.fake import FakeCluster
from chaos.nemesis import loss
from tests.unit.test_nemesis_clock import make_ctx


def test_loss_specs_name_links_and_refuse_netem(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = ["n1", "n2", "n3"]
    rng = random.Random(1)
    assert loss.parse("30%:n1+n2") == (0.3, "n1+n2")
    assert loss.parse(None) == (0.3, "one")
    assert loss.links(nodes, "n1+n2", rng) == {"n1": ["n2"], "n2": ["n1"]}
    assert loss.links(nodes, "n1>n2", rng) == {"n2": ["n1"]}
    assert loss.links(nodes, "n3", rng) == {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}
    with pytest.raises(loss.LossError, match="above 0%"):
        loss.parse("0%:n1+n2")
    monkeypatch.setattr(
        loss.net, "netem_available", lambda: (False, "Specified qdisc kind is unknown.")
    )
    with pytest.raises(loss.LossError, match=r"sch_netem.*qdisc kind is unknown"):
        loss.parse("delay=50ms:n1+n2")


def test_loss_rules_go_in_the_run_chain_and_heal_deletes_them(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, nemesis=("packet-loss",))
    cluster = ctx.cluster
    assert isinstance(cluster, FakeCluster)
    f = loss.PacketLossFault()
    fid = f.start(ctx, f.resolve(ctx, "25%:n1>n2", random.Random(1)))
    added = [argv for node, argv in cluster.net_log if "-A" in argv]
    assert added and all(node == "n2" for node, argv in cluster.net_log if "-A" in argv)
    rule = added[0]
    assert rule[rule.index("-A") + 1].startswith("CHAOS-")
    assert rule[rule.index("--probability") + 1] == "0.2500"
    assert ctx.state["losses"]
    ctx.faults.heal(fid)
    deleted = [argv for _, argv in cluster.net_log if "-D" in argv]
    assert [a[a.index("-D") + 1 :] for a in deleted] == [rule[rule.index("-A") + 1 :]]
    assert not ctx.state["losses"]


def test_tolerance_covers_chance_but_not_a_missing_rule() -> None:
    tol = loss.tolerance(0.3, 400)
    assert 0.05 < tol < 0.15  # a 30% loss measured at 20% would be a broken rule
    assert loss.tolerance(0.0, 400) == pytest.approx(0.02)
