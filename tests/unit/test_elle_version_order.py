"""rw-register's version-order assumptions (Elle's :sequential-keys?, :linearizable-keys?,
:wfr-keys?, :transaction-order): each finds an anomaly that is invisible without it, keeps a
consistent history valid, gives the same verdict whatever the transactions' order, and infers
the version order its definition says (a brute-force reference on small histories)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checkers.elle import RawOp, Txn, VersionOrder, check_transactions, transactions
from chaos.checkers.elle.rw_register import infer
from chaos.checkers.verdict import CheckResult, Verdict
from tests.fuzz import examples
from tests.unit.test_elle_cases import oks, pairs, rw

SEQ = VersionOrder(sequential_keys=True)
LIN = VersionOrder(linearizable_keys=True)
WFR = VersionOrder(wfr_keys=True)


def check(h: list[RawOp], consistency: str, order: VersionOrder | None = None) -> CheckResult:
    txns, _ = transactions(h)
    return check_transactions(txns, "rw-register", consistency, time_limit=30, order=order)


def forbidden(r: CheckResult) -> set[str]:
    return {a["type"] for a in r.anomalies if a["forbidden"]}


# (name, history, consistency, the assumption, the anomaly it reveals)
REVEALED = [
    # p0 and p1 each write x and y, then read the other's version last: each process's order
    # says which write came first on each key, and the two disagree (Elle's G0 case)
    ("sequential-keys",
     pairs((0, "ok", rw("wx1wy2")), (1, "ok", rw("wx2wy1")), (0, "ok", rw("rx2")),
           (1, "ok", rw("ry2"))),
     "read-uncommitted", SEQ, "G0"),
    # t0 sets x = y = 1; then t2 and t3, concurrent, each read one key's 1 and write the
    # other: only real time says both writes of 2 follow t0's 1s (write skew)
    ("linearizable-keys",
     pairs((0, "ok", rw("wx1wy1")), (0, "ok", rw("rx1ry1"))) + [
         RawOp(pos=4 + i, index=4 + i, process=p, type=t, f="txn", value=v)
         for i, (p, t, v) in enumerate([
             (1, "invoke", rw("rx_wy2")), (2, "invoke", rw("ry_wx2")),
             (2, "ok", rw("ry1wx2")), (1, "ok", rw("rx1wy2"))])],
     "serializable", LIN, "G2-item"),
    # each reads the other's write of one key, then overwrites the key it read: under
    # read-uncommitted only the assumption orders the two writes of each key (a ww cycle)
    ("wfr-keys", oks(rw("ry1wx1wy2"), rw("rx1wx2wy1")), "read-uncommitted", WFR, "G0"),
    # Elle's "G-single transaction-order" case: the commit order puts t2 before t1
    ("transaction-order", oks(rw("rx_wy2"), rw("wx3wy4")), "serializable",
     VersionOrder(transaction_order={0: 2, 1: 1}), "G-single"),
]  # fmt: skip

# histories each assumption holds for: serial, every read the latest write
STAYS_VALID = [
    ("sequential-keys",
     pairs((0, "ok", rw("wx1wy1")), (1, "ok", rw("rx1wx2")), (0, "ok", rw("rx2ry1")),
           (1, "ok", rw("ry1wy3"))), SEQ),
    ("linearizable-keys",
     pairs((0, "ok", rw("wx1wy1")), (1, "ok", rw("wx2")), (2, "ok", rw("rx2ry1wy3")),
           (0, "ok", rw("ry3"))), LIN),
    ("wfr-keys", oks(rw("wx1"), rw("rx1wx2wy1"), rw("rx2ry1wy2")), WFR),
    ("transaction-order", oks(rw("rx_wy2"), rw("wx3wy4")),
     VersionOrder(transaction_order={0: 1, 1: 2})),
]  # fmt: skip


@pytest.mark.parametrize("c", REVEALED, ids=lambda c: c[0])
def test_an_assumption_reveals_an_anomaly_invisible_without_it(c: Any) -> None:
    _, h, consistency, order, anomaly = c
    without = check(h, consistency)
    assert without.verdict is Verdict.VALID, without.summary
    with_it = check(h, consistency, order)
    assert with_it.verdict is Verdict.INVALID, with_it.summary
    assert forbidden(with_it) == {anomaly}, with_it.summary
    assert order.named()[0] in with_it.stats["version_order"]["assumed"]


@pytest.mark.parametrize("c", STAYS_VALID, ids=lambda c: c[0])
def test_a_history_the_assumption_holds_for_stays_valid(c: Any) -> None:
    _, h, order = c
    for consistency in ("read-uncommitted", "serializable", "strict-serializable"):
        r = check(h, consistency, order)
        assert r.verdict is Verdict.VALID, (consistency, r.summary)
        assert sum(r.stats["version_order"]["pairs"].values()) > 0  # the source said something


def test_an_assumption_the_history_breaks_is_a_cyclic_version_order() -> None:
    """Elle's "cyclic version order": p0 writes 1, writes 2, reads 1. Its source is named and
    left out, so the explanation of the anomaly holds and nothing else is inferred from it."""
    r = check(pairs((0, "ok", rw("wx1")), (0, "ok", rw("wx2")), (0, "ok", rw("rx1"))),
              "strict-serializable", SEQ)  # fmt: skip
    (a,) = [a for a in r.anomalies if a["type"] == "cyclic-versions"]
    assert a["sources"] == ["initial-state", "sequential-keys"] and a["versions"] == [1, 2]
    assert r.stats["version_order"]["left_out_for_cycles"] == {"sequential-keys": 1}
    assert forbidden(r) == {"cyclic-versions"}


def test_the_explanation_names_the_assumption() -> None:
    _, h, consistency, order, _ = REVEALED[0]
    r = check(h, consistency, order)
    texts = [s["text"] for a in r.anomalies if a["type"] == "G0" for s in a["steps"]]
    assert texts and all("sequential keys" in t for t in texts), texts


def test_a_commit_order_naming_no_transaction_is_refused() -> None:
    from chaos.checkers.elle import TxnInputError

    with pytest.raises(TxnInputError, match=":index 7"):
        check(oks(rw("wx1")), "serializable", VersionOrder(transaction_order={7: 1}))


def test_list_append_refuses_the_assumptions() -> None:
    txns, _ = transactions(oks([["append", "x", 1]]))
    with pytest.raises(ValueError, match="rw-register"):
        check_transactions(txns, "list-append", "serializable", order=SEQ)


# --- random histories: shuffles and a brute-force reference -------------------------------


def history(rng: random.Random, n: int, processes: int = 3, keys: str = "xy") -> list[RawOp]:
    """``n`` transactions by ``processes`` processes, invocations and completions interleaved
    at random; reads return nil or any version written so far (so some histories hold
    anomalies); a few transactions fail or end ``info``."""
    written: dict[str, list[int]] = {k: [] for k in keys}
    value = itertools.count(1)
    events: list[tuple[str, int, list[list[Any]]]] = []
    running: dict[int, list[list[Any]]] = {}
    started = 0
    while started < n or running:
        p = rng.randrange(processes)
        if p in running:
            mops = running.pop(p)
            done = [[f, k, rng.choice([None, *written[k]]) if f == "r" else v]
                    for f, k, v in mops]  # fmt: skip
            t = rng.choices(["ok", "info", "fail"], [8, 1, 1])[0]
            events.append((t, p, done if t == "ok" else mops))
        elif started < n:
            started += 1
            mops = []
            for _ in range(rng.randint(1, 3)):
                k = rng.choice(keys)
                if rng.random() < 0.5:
                    v = next(value)
                    written[k].append(v)
                    mops.append(["w", k, v])
                else:
                    mops.append(["r", k, None])
            running[p] = mops
            events.append(("invoke", p, mops))
    return [
        RawOp(pos=i, index=i, process=p, type=t, f="txn", value=m)
        for i, (t, p, m) in enumerate(events)
    ]


def permuted(txns: list[Txn], rng: random.Random) -> list[Txn]:
    """The same transactions (same history positions) listed in another order."""
    order = list(txns)
    rng.shuffle(order)
    return [msgspec.structs.replace(t, id=i) for i, t in enumerate(order)]


ASSUMPTIONS = [SEQ, LIN, WFR, VersionOrder(sequential_keys=True, linearizable_keys=True)]


def outcome(txns: list[Txn], consistency: str, order: VersionOrder) -> tuple[Verdict, frozenset]:
    r = check_transactions(txns, "rw-register", consistency, time_limit=60, order=order)
    return r.verdict, frozenset(forbidden(r))


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(2, 14), st.randoms(use_true_random=False))
def test_shuffled_transactions_give_the_same_verdict_under_each_assumption(
    n: int, rng: random.Random
) -> None:
    txns, _ = transactions(history(rng, n))
    shuffled = permuted(txns, rng)
    for order in ASSUMPTIONS:
        for consistency in ("read-uncommitted", "serializable", "strict-serializable"):
            assert outcome(shuffled, consistency, order) == outcome(txns, consistency, order)


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(2, 12), st.randoms(use_true_random=False))
def test_sequential_keys_depend_on_each_process_order_only(n: int, rng: random.Random) -> None:
    """Serially run processes interleaved another way: the same verdict (under a model that
    counts no real-time order)."""
    h = history(rng, n)
    runs: dict[Any, list[list[RawOp]]] = {}
    for op in h:  # each process's (invoke, completion) pairs, in its order
        if op.type == "invoke":
            runs.setdefault(op.process, []).append([op])
        else:
            runs[op.process][-1].append(op)
    queues = [list(r) for r in runs.values()]
    mixed: list[RawOp] = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        mixed += q.pop(0)
    mixed = [msgspec.structs.replace(op, pos=i, index=i) for i, op in enumerate(mixed)]
    for consistency in ("read-uncommitted", "serializable"):
        assert outcome(transactions(mixed)[0], consistency, SEQ) == outcome(
            transactions(h)[0], consistency, SEQ
        )


def _ends(t: Txn) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """By the definition: the first and last external version of each key the transaction
    touched: its external read (an ok one's only), its last write (a write before another of
    the key in the same transaction is no version anyone else sees)."""
    reads = _ext_reads(t) if t.type == "ok" else {}
    writes = {k: v for f, k, v in t.mops if f == "w"}
    return {**writes, **reads}, {**reads, **writes}


def _ext_reads(t: Txn) -> dict[Any, Any]:
    """Each key's first micro-op, where it is a read: what the transaction saw from outside."""
    out: dict[Any, Any] = {}
    seen: set[Any] = set()
    for f, k, v in t.mops:
        if k not in seen and f == "r":
            out[k] = v
        seen.add(k)
    return out


def reference(txns: list[Txn], order: VersionOrder, wfr: bool) -> dict[Any, nx.DiGraph]:
    """Every pair the assumptions give, by brute force over all pairs of transactions: a
    before b in the order (process order: same process, ``a`` ok and run first; real time:
    ``a`` ok and completed before ``b`` was invoked) -> last(a) < first(b) on each shared
    key; writes-follow-reads -> an ok transaction's read before its write; nil first."""
    live = [t for t in txns if t.type != "fail"]
    ends = {t.id: _ends(t) for t in live}
    g: dict[Any, nx.DiGraph] = {}

    def link(k: Any, x: Any, y: Any) -> None:
        if x != y:
            g.setdefault(k, nx.DiGraph()).add_edge(_node(x), _node(y))

    def pos(t: Txn) -> int:
        return t.invoke_pos if t.invoke_pos is not None else t.complete_pos  # type: ignore[return-value]

    for a, b in itertools.permutations(live, 2):
        before = a.type == "ok" and (
            (order.sequential_keys and a.process == b.process and pos(a) < pos(b))
            or (
                order.linearizable_keys
                and b.invoke_pos is not None
                and a.complete_pos is not None
                and a.complete_pos < b.invoke_pos
            )
        )
        if before:
            for k in ends[a.id][1].keys() & ends[b.id][0].keys():
                link(k, ends[a.id][1][k], ends[b.id][0][k])
    for t in live:
        if not wfr or t.type != "ok":
            continue
        for k, x in _ext_reads(t).items():
            writes = [v for f, kk, v in t.mops if f == "w" and kk == k]
            if writes and x is not None:
                link(k, x, writes[-1])
    for kg in g.values():
        kg.add_edges_from((NIL, v) for v in list(kg.nodes) if v != NIL)
    return g


NIL = "<nil>"  # networkx takes no None; no history here writes a string


def _node(v: Any) -> Any:
    return NIL if v is None else v


def _closure(edges: Any) -> set[tuple[Any, Any]]:
    tc = nx.transitive_closure(nx.DiGraph((_node(x), _node(y)) for x, y in edges))
    return {(x, y) for x, y in tc.edges if NIL not in (x, y) and x != y}


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(2, 10), st.randoms(use_true_random=False), st.sampled_from(ASSUMPTIONS[:2]))
def test_the_version_order_is_what_the_definition_gives(
    n: int, rng: random.Random, order: VersionOrder
) -> None:
    """With writes-follow-reads (as from read-committed up), the pairs inferred (the nearest
    ones only) order each key's versions exactly as all pairs of transactions do, and a key is
    reported cyclic exactly when those pairs make a cycle; without writes-follow-reads, every
    pair inferred is one the definition gives and every cycle reported is one (a transaction
    that reads one version and writes another does not chain the order through it: Elle's
    limit too)."""
    txns, _ = transactions(history(rng, n))
    for wfr in (True, False):
        inf = infer(txns, writes_follow_reads=wfr, order=order)
        cyclic = {a["key"] for a in inf.anomalies if a["type"] == "cyclic-versions"}
        after = inf.explainer.after  # type: ignore[attr-defined]
        ref = reference(txns, order, wfr)
        for k, kg in ref.items():
            ours = _closure((x, y) for x, ys in after.get(k, {}).items() for y in ys)
            dag = nx.is_directed_acyclic_graph(kg)
            if wfr:  # the nearest pairs chain through every transaction: all is found
                assert (k in cyclic) == (not dag), (k, sorted(kg.edges, key=repr))
                if dag:
                    assert ours == _closure(kg.edges), k
            else:  # sound, but a read-then-write transaction breaks the chain (as in Elle)
                assert not (k in cyclic and dag), k
                assert ours <= _closure(kg.edges), k
        for k in after.keys() - ref.keys():  # no pair where the definition gives none
            assert not _closure((x, y) for x, ys in after[k].items() for y in ys), k


# --- the command line ------------------------------------------------------------------------

G0_EDN = """\
{:type :invoke, :process 0, :f :txn, :value [[:w :x 1] [:w :y 2]], :index 0}
{:type :ok, :process 0, :f :txn, :value [[:w :x 1] [:w :y 2]], :index 1}
{:type :invoke, :process 1, :f :txn, :value [[:w :x 2] [:w :y 1]], :index 2}
{:type :ok, :process 1, :f :txn, :value [[:w :x 2] [:w :y 1]], :index 3}
{:type :invoke, :process 0, :f :txn, :value [[:r :x nil]], :index 4}
{:type :ok, :process 0, :f :txn, :value [[:r :x 2]], :index 5}
{:type :invoke, :process 1, :f :txn, :value [[:r :y nil]], :index 6}
{:type :ok, :process 1, :f :txn, :value [[:r :y 2]], :index 7}
"""


def _cli(*args: str) -> Any:
    from click.testing import CliRunner

    from chaos.cli import main

    return CliRunner().invoke(main, ["check", *args])


def test_chaos_check_takes_the_assumptions(tmp_path: Path) -> None:
    h = tmp_path / "g0.edn"
    h.write_text(G0_EDN)
    base = [str(h), "-m", "rw-register", "--consistency", "read-uncommitted"]
    assert _cli(*base).exit_code == 0
    r = _cli(*base, "--sequential-keys", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    (res,) = doc["results"]
    assert {a["type"] for a in res["anomalies"]} == {"G0"}
    assert res["stats"]["version_order"]["assumed"] == ["sequential-keys"]
    # the database's commit order: op 3's transaction before op 1's on both keys, no cycle
    order = tmp_path / "order.edn"
    order.write_text("{1 2, 3 1}")
    assert _cli(*base, "--version-order", str(order)).exit_code == 0
    order.write_text('{"1": 1, "3": 1}')
    r = _cli(*base, "--version-order", str(order))
    assert r.exit_code == 3 and "share a position" in r.output


@pytest.mark.parametrize("model", ["list-append", "register"])
def test_the_assumptions_are_rw_registers_only(tmp_path: Path, model: str) -> None:
    h = tmp_path / "g0.edn"
    h.write_text(G0_EDN)
    r = _cli(str(h), "-m", model, "--linearizable-keys")
    assert r.exit_code == 3 and "applies to rw-register" in r.output, r.output
    r = _cli(str(tmp_path), "--wfr-keys")  # a run folder: its lab's checkers
    assert r.exit_code == 3 and "only with --model" in r.output


def test_a_nil_read_after_a_write_is_a_cyclic_version_order() -> None:
    """p0 writes 1, then reads nil and writes 2: nil came after 1 for this process (Elle's
    code takes the write, 1 < 2, and misses it)."""
    r = check(pairs((0, "ok", rw("wx1")), (0, "ok", rw("rx_wx2"))), "read-uncommitted", SEQ)
    (a,) = [a for a in r.anomalies if a["type"] == "cyclic-versions"]
    assert a["versions"] == [None, 1] and r.verdict is Verdict.INVALID
    assert (
        check(pairs((0, "ok", rw("wx1")), (0, "ok", rw("rx_wx2"))), "read-uncommitted").verdict
        is not Verdict.INVALID
    )
