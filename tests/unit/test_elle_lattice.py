"""Elle's model lattice: its implications, and the models found anomalies rule out (``not`` /
``also_not``), checked against the sets Elle's own tests expect (jepsen-io/elle,
``test/elle/consistency_model_test.clj`` at dda36d8; Elle prints ``strong-serializable`` where
chaos says ``strict-serializable``, the same model PL-SS)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from chaos.checkers.elle import lattice
from chaos.checkers.elle.consistency import MODELS, UNDECIDABLE, model
from chaos.checkers.elle.graph import PROCESS, REALTIME
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from tests.unit.elle_history import check, concurrent, found, serial, then

ELLE_G1A_ALSO_NOT = {
    "read-atomic", "update-atomic", "causal-cerone", "consistent-view", "cursor-stability",
    "forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read",
    "monotonic-view", "parallel-snapshot-isolation", "prefix", "repeatable-read",
    "serializable", "snapshot-isolation", "strong-read-committed", "strong-snapshot-isolation",
    "strict-serializable", "strong-session-read-committed", "strong-session-serializable",
    "strong-session-snapshot-isolation", "update-serializable",
}  # fmt: skip
ELLE_INTERNAL_ALSO_NOT = {
    "causal-cerone", "parallel-snapshot-isolation", "prefix", "update-atomic", "serializable",
    "snapshot-isolation", "strict-serializable", "strong-session-serializable",
    "strong-session-snapshot-isolation", "strong-snapshot-isolation",
}  # fmt: skip
ELLE_G_SINGLE_ALSO_NOT = {
    "snapshot-isolation", "serializable", "strict-serializable",
    "strong-session-snapshot-isolation", "strong-snapshot-isolation",
    "strong-session-serializable", "forward-consistent-view", "update-serializable",
}  # fmt: skip


def names(ms: frozenset[str]) -> set[str]:
    return {lattice.friendly(m) for m in ms}


def test_weakest_and_strongest_as_elle() -> None:
    assert names(lattice.weakest([])) == set()
    assert names(lattice.weakest(["serializable", "strict-serializable"])) == {"serializable"}
    four = ["repeatable-read", "read-committed", "sequential", "read-your-writes"]
    assert names(lattice.weakest(four)) == {"read-your-writes", "read-committed"}
    assert names(lattice.strongest(four)) == {"repeatable-read", "sequential"}
    assert names(lattice.weakest(["serializable", "read-atomic"])) == {"read-atomic"}
    assert names(lattice.strongest(["read-atomic", "serializable"])) == {"serializable"}


def test_what_read_committed_prohibits_as_elle() -> None:
    assert lattice.prohibited_by(["read-committed"]) == {
        "dirty-update", "G1a", "G1b", "G1c", "G1", "G0", "PL-1-cycle-exists",
        "PL-2-cycle-exists", "cyclic-versions", "duplicate-elements", "incompatible-order",
        "future-read",
        # chaos's additions: a garbage read implies G1a, duplicate appends or writes duplicate
        # elements
        "garbage-read", "duplicate-appends", "duplicate-writes",
    }  # fmt: skip
    with pytest.raises(ValueError, match="unknown consistency model"):
        lattice.prohibited_by(["stricct-snappshot-isolation"])


def test_impossible_models_as_elle() -> None:
    assert names(lattice.impossible_models(["G-single"])) == {
        "consistent-view",
        *ELLE_G_SINGLE_ALSO_NOT,
    }
    assert names(lattice.impossible_models(["G-SI"])) == {
        "snapshot-isolation", "serializable", "strict-serializable", "strong-session-serializable",
        "strong-session-snapshot-isolation", "strong-snapshot-isolation",
    }  # fmt: skip
    assert names(lattice.impossible_models(["dirty-update"])) == {
        "read-committed",
        *ELLE_G1A_ALSO_NOT,
    }
    assert lattice.impossible_models(["strong-session-serializable-cycle-exists"]) == {
        "strong-session-serializable", "PL-SS"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("anomalies", "is_not", "also_not"),
    [
        ([], set(), set()),
        (["internal"], {"read-atomic"}, ELLE_INTERNAL_ALSO_NOT),
        (["G2", "internal"], {"read-atomic"}, ELLE_INTERNAL_ALSO_NOT),
        (["G1a"], {"read-committed"}, ELLE_G1A_ALSO_NOT),
        (["G-single"], {"consistent-view"}, ELLE_G_SINGLE_ALSO_NOT),
        (["G-single-realtime"], {"strong-snapshot-isolation"}, {"strict-serializable"}),
    ],
)
def test_boundary_as_elle(anomalies: list[str], is_not: set[str], also_not: set[str]) -> None:
    n, a = lattice.boundary(anomalies)
    assert (set(n), set(a)) == (is_not, also_not)


def test_boundary_of_cyclic_versions_as_elle() -> None:
    n, a = lattice.boundary(["cyclic-versions"])
    assert n == ["read-uncommitted"]
    assert set(a) == {
        "read-committed", "snapshot-isolation", "causal-cerone", "consistent-view",
        "cursor-stability", "forward-consistent-view", "monotonic-atomic-view",
        "monotonic-snapshot-read", "monotonic-view", "parallel-snapshot-isolation", "prefix",
        "read-atomic", "repeatable-read", "update-atomic", "serializable",
        "strong-read-committed", "strong-read-uncommitted", "strict-serializable",
        "strong-session-read-committed", "strong-session-read-uncommitted",
        "strong-session-serializable", "strong-session-snapshot-isolation",
        "strong-snapshot-isolation", "update-serializable",
    }  # fmt: skip
    assert lattice.boundary(["lost-update"])[0] == ["cursor-stability", "update-atomic"]


def test_the_lattice_implies_what_the_literature_says() -> None:
    # a model forbids everything its weaker models forbid
    for m in lattice.ALL_MODELS:
        for weaker in lattice.MODEL_IMPLIES.get(m, ()):
            assert lattice.prohibited_by([weaker]) <= lattice.prohibited_by([m]), (m, weaker)
    si, ser = model("snapshot-isolation"), model("serializable")
    assert si.forbidden("G-single") and not si.forbidden("G2-item")  # write skew allowed
    assert ser.forbidden("G2-item") and ser.forbidden("internal")
    assert not model("repeatable-read").forbidden("internal")
    assert model("strong-session-snapshot-isolation").forbidden("G-single-process")
    assert not model("strong-session-snapshot-isolation").forbidden("G2-item-process")
    assert model("read-atomic").forbidden("future-read")
    assert model("read-committed").forbidden("future-read")  # it is a G1c
    assert not model("monotonic-atomic-view").forbidden("internal")


def test_every_model_counts_the_order_edges_its_anomalies_need() -> None:
    assert len(MODELS) == 25 and len(UNDECIDABLE) == 11  # Elle's 36
    assert {"linearizable", "causal", "PRAM"} <= set(UNDECIDABLE)
    assert model("strict-serializable").order_edges == PROCESS | REALTIME
    assert model("strong-snapshot-isolation").order_edges == PROCESS | REALTIME
    assert model("strong-session-snapshot-isolation").order_edges == PROCESS
    assert model("strong-session-read-uncommitted").order_edges == PROCESS
    assert model("serializable").order_edges == 0
    assert model("PL-2+").name == "consistent-view"
    assert model("conflict-serializable").name == "serializable"


# --------------------------------------------------------------- not / also_not on histories

G1A = concurrent(
    ("fail", 0, [("append", "x", 1)]),
    ("ok", 1, [("r", "x", [1])]),
    ("ok", 2, [("append", "y", 1)]),
    ("ok", 3, [("r", "y", [1])]),
)
STALE = then(
    concurrent(("info", 0, [("append", "x", 1)])),
    serial(("ok", 1, [("r", "x", [1])]), ("ok", 2, [("r", "x", [])])),
)


def test_a_g1a_history_rules_out_read_committed_and_up() -> None:
    r = check(G1A, "read-uncommitted")
    assert {a["type"] for a in r.anomalies} == {"G1a"}
    assert r.verdict is Verdict.VALID, r.summary  # allowed, but still ruled out models
    assert r.stats["not"] == ["read-committed"]
    assert set(r.stats["also_not"]) == ELLE_G1A_ALSO_NOT
    assert check(G1A, "read-committed").verdict is Verdict.INVALID


def test_a_stale_read_rules_out_strong_snapshot_isolation() -> None:
    r = check(STALE, "strong-snapshot-isolation")
    assert found(r, "G-single-realtime")
    assert r.verdict is Verdict.INVALID, r.summary
    assert (r.stats["not"], r.stats["also_not"]) == (
        ["strong-snapshot-isolation"],
        ["strict-serializable"],
    )
    # the same history is strong-session SI: its processes never saw their own writes missed
    assert check(STALE, "strong-session-snapshot-isolation").verdict is Verdict.VALID


def test_a_valid_history_rules_out_nothing() -> None:
    r = check(serial(("ok", 0, [("append", "x", 1)]), ("ok", 1, [("r", "x", [1])])))
    assert r.verdict is Verdict.VALID
    assert (r.stats["not"], r.stats["also_not"]) == ([], [])


def test_no_dependency_is_unknown_not_valid() -> None:
    r = check(concurrent(("ok", 0, [("append", "x", 1)]), ("ok", 1, [("append", "y", 1)])))
    assert r.verdict is Verdict.UNKNOWN
    assert "no dependency between any two transactions" in r.summary
    assert any("no dependency" in x for x in r.stats["incomplete"])


def test_a_model_forbidding_no_transactional_anomaly_is_unknown() -> None:
    h = serial(("ok", 0, [("append", "x", 1)]), ("ok", 1, [("r", "x", [1])]))
    r = check(h, "linearizable")
    assert r.verdict is Verdict.UNKNOWN
    assert "linearizable forbids no anomaly" in r.summary
    # yet a forbidden-by-nothing anomaly still names the models it rules out
    r = check(G1A, "causal")
    assert r.verdict is Verdict.UNKNOWN and r.stats["not"] == ["read-committed"]


def test_cli_accepts_every_model_and_prints_the_boundary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "h.edn"
    f.write_text(
        "{:type :invoke, :process 0, :value [[:append :x 1]]}\n"
        "{:type :fail, :process 0, :value [[:append :x 1]]}\n"
        "{:type :invoke, :process 1, :value [[:r :x nil]]}\n"
        "{:type :ok, :process 1, :value [[:r :x [1]]]}\n"
    )
    for name in ("update-atomic", "PL-2+", "strong-session-read-committed"):
        r = CliRunner().invoke(
            check_file_command,
            [str(f), "--model", "list-append", "--consistency", name, "--json"],
        )
        assert r.exit_code == 1, r.output
        assert '"not": [' in r.output and '"read-committed"' in r.output
