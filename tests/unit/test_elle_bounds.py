"""Where the Elle checker stops short — a time limit, an edge budget — it never says valid."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.checkers.elle import check, check_transactions, cycles, graph, rw_register, transactions
from chaos.checkers.elle.consistency import ConsistencyModel
from chaos.checkers.verdict import Verdict
from tests.unit.elle_history import concurrent, serial, then

WRITE_SKEW = then(
    concurrent(
        ("ok", 0, [("r", "y", []), ("append", "x", 1)]),
        ("ok", 1, [("r", "x", []), ("append", "y", 2)]),
    ),
    serial(("ok", 2, [("r", "x", [1]), ("r", "y", [2])])),
)


def test_the_linear_pass_decides_every_models_verdict_even_without_time() -> None:
    txns, _ = transactions(WRITE_SKEW)
    # snapshot isolation allows the write skew, and the linear pass (no cycle with no two rw
    # edges adjacent) proves it has nothing else: valid even with no time for the exact search
    r = check_transactions(txns, "list-append", "snapshot-isolation", time_limit=0.0)
    assert r.verdict is Verdict.VALID, r.summary
    assert "search_cut_short" not in r.stats
    # any cycle is forbidden by serializable: the linear pass's witness says invalid
    r = check_transactions(txns, "list-append", "serializable", time_limit=0.0)
    assert r.verdict is Verdict.INVALID
    (a,) = r.anomalies
    assert a["type"] == "G2-item" and len(a["steps"]) == 2


READ_SKEW = then(
    concurrent(
        ("ok", 0, [("r", "x", []), ("r", "z", [2])]),
        ("ok", 1, [("append", "x", 1), ("append", "z", 2)]),
    ),
    serial(("ok", 2, [("r", "x", [1])])),
)
G2_ONLY = ConsistencyModel(name="g2-only", aka=(), forbids=frozenset({"G2-item"}), order_edges=0)


def test_a_forbidden_type_left_undecided_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model forbidding G2-item alone (no linear pass decides it): a G-single in hand does not
    rule it out, so a search with no time or no steps left says unknown, naming the type."""
    txns, _ = transactions(READ_SKEW)
    monkeypatch.setattr(check, "model", lambda name: G2_ONLY)
    r = check_transactions(txns, "list-append", "g2-only", time_limit=10.0)
    assert r.verdict is Verdict.VALID, r.summary  # searched: a G-single, no G2-item
    assert [a["type"] for a in r.anomalies] == ["G-single"]
    r = check_transactions(txns, "list-append", "g2-only", time_limit=0.0)
    assert r.verdict is Verdict.UNKNOWN, r.summary
    assert "before finding or ruling out G2-item" in r.summary
    cut = r.stats["search_cut_short"]  # the allowed types left undecided are listed too
    assert cut == {"components": 1, "largest": 2, "undecided": ["G-nonadjacent", "G2-item"]}
    monkeypatch.setattr(cycles, "MAX_STEPS", 0)
    r = check_transactions(txns, "list-append", "g2-only", time_limit=10.0)
    assert r.verdict is Verdict.UNKNOWN and "ran out of steps or time" in r.summary


def test_rw_edges_left_out_make_the_verdict_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    h = concurrent(
        ("ok", 0, [("r", "x", None)]),
        ("ok", 1, [("r", "x", None)]),
        ("ok", 2, [("w", "x", 1)]),
        ("ok", 3, [("w", "x", 2)]),
    )
    txns, _ = transactions(h)
    assert check_transactions(txns, "rw-register", "serializable").verdict is Verdict.VALID
    monkeypatch.setattr(rw_register, "MAX_RW_EDGES", 3)  # 2 nil readers x 2 writes > 3
    r = check_transactions(txns, "rw-register", "serializable")
    assert r.verdict is Verdict.UNKNOWN
    assert "4 anti-dependency (rw) edges were not inferred" in r.summary


def test_realtime_edges_past_the_budget_make_the_verdict_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # three transactions complete together, three more start after: nine real-time edges
    first = concurrent(*(("ok", p, [("append", "x", p + 1)]) for p in range(3)))
    later = concurrent(*(("ok", p, [("r", "x", [1, 2, 3])]) for p in range(3, 6)))
    txns, _ = transactions(then(first, later))
    assert check_transactions(txns, "list-append").verdict is Verdict.VALID
    monkeypatch.setattr(graph, "MAX_REALTIME_EDGES", 5)
    r = check_transactions(txns, "list-append")
    assert r.verdict is Verdict.UNKNOWN
    assert "real-time edges past the first 5 were not added" in r.summary
    # a forbidden anomaly found without them still decides
    garbage = concurrent(*(("ok", p, [("r", "x", [9])]) for p in range(3, 6)))
    stale = then(first, garbage)
    txns, _ = transactions(stale)
    r = check_transactions(txns, "list-append")
    assert r.verdict is Verdict.INVALID
    assert "garbage-read" in {a["type"] for a in r.anomalies}
    assert r.stats["incomplete"]


def test_many_cycles_are_counted_all_and_explained_twenty() -> None:
    pairs = []
    for i in range(25):
        x, y = f"x{i}", f"y{i}"
        pairs.append(("ok", 2 * i, [("r", y, []), ("append", x, 1)]))
        pairs.append(("ok", 2 * i + 1, [("r", x, []), ("append", y, 2)]))
    reads = [("ok", 100, [("r", f"x{i}", [1]), ("r", f"y{i}", [2])]) for i in range(25)]
    txns, _ = transactions(then(concurrent(*pairs), serial(*reads)))
    r = check_transactions(txns, "list-append", "serializable")
    g2 = [a for a in r.anomalies if a["type"] == "G2-item"]
    assert len(g2) == 20 and all(a["count"] == 25 for a in g2)
    assert r.stats["anomaly_types"] == {"G2-item": 25}
    assert "G2-item (25)" in r.summary
    # cases of a non-cycle anomaly: counted once each, not once per kept case
    inc = concurrent(
        ("ok", 0, [("append", "k", 1), ("append", "k", 2)]),
        ("ok", 1, [("r", "k", [2])]),
        ("ok", 2, [("r", "k", [1, 2])]),
        ("ok", 3, [("r", "k", [2, 1])]),
    )
    txns, _ = transactions(inc)
    r = check_transactions(txns, "list-append", "serializable")
    assert r.stats["anomaly_types"]["incompatible-order"] == 2


def test_rw_register_inference_has_power_on_a_read_modify_write_store() -> None:
    """Registers read when a transaction starts and written blindly when it ends (the unsafe
    client's pattern, in memory): the checker must find what that loses, not call it valid."""
    import random

    from chaos.checkers.elle import RawOp

    found_kinds: set[str] = set()
    invalid = 0
    for seed in range(30):
        rng = random.Random(seed)
        store: dict[Any, Any] = {}
        ops: list[RawOp] = []
        pending: dict[int, tuple[list[list[Any]], dict[Any, Any]]] = {}
        counter = 0
        for _ in range(120):
            p = rng.randrange(4)
            if p not in pending:
                mops: list[list[Any]] = []
                for _ in range(rng.randint(1, 3)):
                    k = rng.randrange(2)
                    counter += 1
                    mops += [["r", k, None], ["w", k, counter]]
                pending[p] = (mops, dict(store))
                ops.append(RawOp(pos=len(ops), index=len(ops), process=p, type="invoke",
                                 f="txn", value=mops))  # fmt: skip
                continue
            mops, snap = pending.pop(p)
            done: list[list[Any]] = []
            for f, k, v in mops:
                if f == "r":
                    done.append(["r", k, snap.get(k)])
                else:
                    snap[k] = v
                    store[k] = v
                    done.append(["w", k, v])
            ops.append(RawOp(pos=len(ops), index=len(ops), process=p, type="ok", f="txn",
                             value=done))  # fmt: skip
        txns, _ = transactions(ops)
        r = check_transactions(txns, "rw-register", "snapshot-isolation")
        invalid += r.verdict is Verdict.INVALID
        found_kinds |= {a["type"] for a in r.anomalies if a["forbidden"]}
    assert invalid >= 25, invalid
    assert "lost-update" in found_kinds, found_kinds
