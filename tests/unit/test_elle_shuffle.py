"""The verdict does not depend on the order of the transactions: planted cycles, shuffled, are
always found — alone, among noise, and in Elle's "unfindable" G-single (a long ring drowned in
G2-item cycles), where the old search gave up after 64 edges and answered valid."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checkers.elle import MODELS, RawOp, check_transactions, transactions
from chaos.checkers.verdict import Verdict
from tests.fuzz import examples

Mops = list[tuple[str, Any, Any]]

# minimal cycles (Elle's checker-test shapes) on keys of their own: (mops of each txn, the type,
# the weakest model forbidding it)
PLANTS: dict[str, tuple[list[Mops], str]] = {
    "G0": ([[("append", "x", 1), ("append", "y", 1)], [("append", "x", 2), ("append", "y", 2)],
            [("r", "x", [1, 2]), ("r", "y", [2, 1])]], "read-uncommitted"),
    "G1c": ([[("append", "x", 1), ("r", "y", [1])], [("append", "x", 2), ("append", "y", 1)],
             [("r", "x", [1, 2])]], "read-committed"),
    "G-single": ([[("append", "x", 1), ("append", "y", 1)], [("append", "x", 2), ("r", "y", [])],
                  [("r", "x", [1, 2])]], "snapshot-isolation"),
    "G2-item": ([[("append", "x", 1), ("r", "y", [])], [("append", "y", 1), ("r", "x", [])],
                 [("r", "x", [1]), ("r", "y", [1])]], "serializable"),
}  # fmt: skip


def _rename(mops: Mops, tag: int) -> Mops:
    return [(f, (tag, k), v) for f, k, v in mops]


def concurrent(txns: list[Mops]) -> list[RawOp]:
    """Every transaction invoked, then every one completed, in this order (one process each):
    no process or real-time order between them."""
    inv = [[[f, k, None if f == "r" else v] for f, k, v in m] for m in txns]
    events = [("invoke", p, m) for p, m in enumerate(inv)]
    events += [("ok", p, [list(x) for x in m]) for p, m in enumerate(txns)]
    return [
        RawOp(pos=i, index=i, process=p, type=t, f="txn", value=v)
        for i, (t, p, v) in enumerate(events)
    ]


def noise(rng: random.Random, n: int) -> list[Mops]:
    """Serial transactions over a few keys, each read a true prefix: no anomaly of their own,
    but edges everywhere."""
    state: dict[str, list[int]] = {}
    out: list[Mops] = []
    elem = 100
    for _ in range(n):
        m: Mops = []
        for _ in range(rng.randint(1, 3)):
            k = rng.choice("abc")
            if rng.random() < 0.5:
                elem += 1
                state.setdefault(k, []).append(elem)
                m.append(("append", k, elem))
            else:
                m.append(("r", k, list(state.get(k, []))))
        out.append(m)
    return out


def verdicts(txns: list[Mops]) -> dict[str, tuple[Verdict, frozenset[str]]]:
    ts, _ = transactions(concurrent(txns))
    out = {}
    for name in MODELS:
        r = check_transactions(ts, "list-append", name, time_limit=60)
        out[name] = (r.verdict, frozenset(a["type"] for a in r.anomalies if a["forbidden"]))
    return out


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(st.sampled_from(sorted(PLANTS)), min_size=0, max_size=3),
    st.integers(0, 12),
    st.randoms(use_true_random=False),
)
def test_shuffled_transactions_give_the_same_verdict(
    plants: list[str], n_noise: int, rng: random.Random
) -> None:
    txns = noise(rng, n_noise)
    for i, p in enumerate(plants):
        txns += [_rename(m, i) for m in PLANTS[p][0]]
    first = verdicts(txns)
    shuffled = list(txns)
    rng.shuffle(shuffled)
    assert verdicts(shuffled) == first
    for p in plants:  # each planted type is found where its model forbids it
        model = PLANTS[p][1]
        assert first[model][0] is Verdict.INVALID and p in first[model][1], (p, first[model])


def unfindable(n: int, noise_n: int, g1c: bool = False) -> list[Mops]:
    """Elle's ``unfindable-g-single`` (list_append_test.clj): a ring of ``n`` transactions,
    a ww chain on key ``ring``, whose last one misses the first one's append to ``anti`` (one
    G-single through the whole ring); off every ring link a chain of ``noise_n`` transactions
    whose rw-rw hops back to the ring make G2-item cycles everywhere. With ``g1c``, the first
    one instead reads the last one's append to ``anti``: one G1c through the ring."""
    ring: list[Mops] = []
    for i in range(n):
        m: Mops = [("append", "ring", i)]
        if i == 0:
            m.append(("r", "anti", ["last"]) if g1c else ("append", "anti", "first"))
        elif i == n - 1:
            m.append(("append", "anti", "last") if g1c else ("r", "anti", None))
        else:
            m.append(("append", i, 0))
        ring.append(m)
    txns = [*ring, [("r", "ring", list(range(n)))]]
    for i in range(1, n - 1):
        for j in range(1, noise_n):
            if j == noise_n - 2:
                txns.append([("r", i, list(range(noise_n - 2))), ("r", ("anti", i), None)])
            elif j == noise_n - 1:
                txns.append([("append", ("anti", i), 0), ("r", "ring", None)])
            else:
                txns.append([("append", i, j)])
    return txns


@pytest.mark.parametrize("seed", [0, 1])
def test_elles_unfindable_g_single_is_found_in_any_order(seed: int) -> None:
    txns = unfindable(80, 6)
    random.Random(seed).shuffle(txns)
    ts, _ = transactions(concurrent(txns))
    r = check_transactions(ts, "list-append", "snapshot-isolation", time_limit=60)
    assert r.verdict is Verdict.INVALID, r.summary
    assert "G-single" in {a["type"] for a in r.anomalies if a["forbidden"]}
    r = check_transactions(ts, "list-append", "read-committed", time_limit=60)
    assert r.verdict is Verdict.VALID, r.summary  # G-single and G2-item are allowed there


@pytest.mark.parametrize("seed", [0, 1])
def test_a_g1c_through_the_ring_is_found_in_any_order(seed: int) -> None:
    txns = unfindable(80, 6, g1c=True)
    random.Random(seed).shuffle(txns)
    ts, _ = transactions(concurrent(txns))
    r = check_transactions(ts, "list-append", "read-committed", time_limit=60)
    assert r.verdict is Verdict.INVALID, r.summary
    assert {a["type"] for a in r.anomalies if a["forbidden"]} == {"G1c"}
