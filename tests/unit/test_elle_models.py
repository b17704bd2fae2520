"""Elle-style checking: the consistency-model table, serial and atomically-executed histories
that must always pass, and the command line over EDN and JSONL files."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checkers.elle import MODELS, NAMES, RawOp, model
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from tests.unit.elle_history import check, concurrent, found, serial, then

# ----------------------------------------------------------------------- the model table

CYCLES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
TABLE = {
    # model: the cycle anomalies it forbids (data edges only)
    "read-uncommitted": {"G0"},
    "read-committed": {"G0", "G1c"},
    "repeatable-read": set(CYCLES),
    "snapshot-isolation": {"G0", "G1c", "G-single", "G-nonadjacent"},
    "serializable": set(CYCLES),
    "strong-session-serializable": set(CYCLES),
    "strict-serializable": set(CYCLES),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_model_forbids_exactly_its_cycles(name: str) -> None:
    m = model(name)
    assert {c for c in CYCLES if m.forbidden(c)} == TABLE[name]
    assert m.forbidden("G1a") == (name != "read-uncommitted")
    assert m.forbidden("lost-update") == (name not in ("read-uncommitted", "read-committed"))
    assert m.forbidden("G-single-realtime") == (name == "strict-serializable")
    assert m.forbidden("G0-process") == (
        name in ("strict-serializable", "strong-session-serializable")
    )


def test_models_are_ordered_by_strength() -> None:
    chain = ["read-uncommitted", "read-committed", "repeatable-read", "serializable"]
    for weak, strong in itertools.pairwise(chain):
        assert MODELS[weak].forbids < MODELS[strong].forbids
    assert MODELS["read-committed"].forbids < MODELS["snapshot-isolation"].forbids
    assert MODELS["snapshot-isolation"].forbids < MODELS["serializable"].forbids
    assert MODELS["serializable"].forbids < MODELS["strict-serializable"].forbids


def test_usual_names_and_unknown_ones() -> None:
    assert model("PL-3").name == "serializable"
    assert model("pl-si").name == "snapshot-isolation"
    assert model("strong-serializable").name == "strict-serializable"
    assert model("PL-2.99").name == "repeatable-read"
    assert "PL-1" in NAMES
    assert model("linearizable").name == "linearizable"  # in Elle's lattice, forbids nothing
    with pytest.raises(ValueError, match="unknown consistency model 'linearisable'"):
        model("linearisable")


READ_SKEW = then(
    concurrent(
        ("ok", 0, [("r", "x", []), ("r", "z", [2])]),
        ("ok", 1, [("append", "x", 1), ("append", "z", 2)]),
    ),
    serial(("ok", 2, [("r", "x", [1])])),
)


@pytest.mark.parametrize(
    ("consistency", "verdict"),
    [
        ("read-uncommitted", Verdict.VALID),
        ("read-committed", Verdict.VALID),
        ("repeatable-read", Verdict.INVALID),
        ("snapshot-isolation", Verdict.INVALID),
        ("serializable", Verdict.INVALID),
        ("strict-serializable", Verdict.INVALID),
    ],
)
def test_g_single_is_allowed_under_read_committed_only_below(
    consistency: str, verdict: Verdict
) -> None:
    r = check(READ_SKEW, consistency)
    assert r.verdict is verdict, r.summary
    (g,) = found(r, "G-single")
    assert g["forbidden"] == (verdict is Verdict.INVALID)
    if verdict is Verdict.VALID:
        assert f"allowed by {consistency}: G-single" in r.summary


# ------------------------------------------------- histories that must always be consistent


def simulate(rng: random.Random, data_model: str, n: int, procs: int, keys: int) -> list[RawOp]:
    """Transactions executed atomically against an in-memory store, each at some point
    between its invocation and its completion, ``procs`` at a time (1: one after another).
    Some fail (not applied); some end ``info`` (applied or not)."""
    store: dict[int, Any] = {}
    counter = iter(range(1, 10**9))
    ops: list[RawOp] = []
    slot_process = list(range(procs))
    next_process = procs
    pending: dict[int, dict[str, Any]] = {}  # slot -> txn in flight
    left = n

    def emit(t: str, p: int, v: Any) -> None:
        ops.append(RawOp(pos=len(ops), index=len(ops), process=p, type=t, f="txn", value=v))

    while left or pending:
        actions = [("invoke", s) for s in range(procs) if s not in pending and left]
        actions += [("run" if not x["done"] else "end", s) for s, x in pending.items()]
        what, s = rng.choice(actions)
        p = slot_process[s]
        if what == "invoke":
            left -= 1
            mops = []
            for _ in range(rng.randint(1, 4)):
                k = rng.randrange(keys)
                if rng.random() < 0.5:
                    mops.append(["r", k, None])
                else:
                    mops.append(
                        ["append" if data_model == "list-append" else "w", k, next(counter)]
                    )
            outcome = rng.choice(["ok", "ok", "ok", "ok", "fail", "info"])
            pending[s] = {"mops": mops, "outcome": outcome, "done": False, "result": None}
            emit("invoke", p, mops)
        elif what == "run":
            x = pending[s]
            x["done"] = True
            if x["outcome"] == "fail" or (x["outcome"] == "info" and rng.random() < 0.5):
                continue
            result = []
            for f, k, v in x["mops"]:
                if f == "r":
                    cur = store.get(k)
                    result.append([f, k, list(cur) if isinstance(cur, list) else cur])
                elif f == "append":
                    store.setdefault(k, []).append(v)
                    result.append([f, k, v])
                else:
                    store[k] = v
                    result.append([f, k, v])
            x["result"] = result
        else:
            x = pending.pop(s)
            if x["outcome"] == "ok":
                emit("ok", p, x["result"])
            elif x["outcome"] == "fail":
                emit("fail", p, x["mops"])
            else:
                emit("info", p, x["mops"])
                slot_process[s] = next_process  # Jepsen retires a process after info
                next_process += 1
    return ops


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    data_model=st.sampled_from(["list-append", "rw-register"]),
    n=st.integers(1, 40),
    keys=st.integers(1, 4),
)
def test_a_serial_history_is_always_strict_serializable(
    seed: int, data_model: str, n: int, keys: int
) -> None:
    h = simulate(random.Random(seed), data_model, n, 1, keys)
    r = check(h, "strict-serializable", model=data_model)
    assert r.verdict in (Verdict.VALID, Verdict.UNKNOWN), r.anomalies[:2]
    assert not r.anomalies, r.anomalies[:2]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    data_model=st.sampled_from(["list-append", "rw-register"]),
    n=st.integers(1, 60),
    procs=st.integers(2, 5),
    keys=st.integers(1, 4),
)
def test_atomic_execution_between_invoke_and_completion_is_strict_serializable(
    seed: int, data_model: str, n: int, procs: int, keys: int
) -> None:
    h = simulate(random.Random(seed), data_model, n, procs, keys)
    r = check(h, "strict-serializable", model=data_model)
    assert not [a for a in r.anomalies if a["forbidden"]], r.anomalies[:2]


# ------------------------------------------------------------------------ the command line

WRITE_SKEW_EDN = """; Jepsen :txn ops, pretty-printed, some without :process or :time
[{:type :invoke, :f :txn, :value [[:r :y nil] [:append :x 1]], :process 0, :time 1}
 {:type :invoke, :f :txn, :value [[:r :x nil] [:append :y 2]], :process 1, :time 2}
 {:type :ok, :f :txn, :value [[:r :y []] [:append :x 1]], :process 0, :time 3}
 {:type :ok, :f :txn, :value [[:r :x []] [:append :y 2]], :process 1, :time 4}
 {:type :ok, :value [[:r :x [1]] [:r :y [2]]]}]
"""


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(check_file_command, args)


def test_cli_reads_jepsen_txn_edn_with_and_without_process(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(WRITE_SKEW_EDN)
    r = _run([str(f), "--model", "list-append", "--consistency", "serializable", "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    (res,) = doc["results"]
    (g2,) = [a for a in res["anomalies"] if a["type"] == "G2-item"]
    assert sorted(s["text"] for s in g2["steps"]) == [
        "T1 < T2: T1's read of key x ([]) missed T2's append of 1 (rw)",
        "T2 < T1: T2's read of key y ([]) missed T1's append of 2 (rw)",
    ] or sorted(s["text"] for s in g2["steps"]) == [
        "T1 < T2: T1's read of key y ([]) missed T2's append of 2 (rw)",
        "T2 < T1: T2's read of key x ([]) missed T1's append of 1 (rw)",
    ]
    r = _run([str(f), "--model", "list-append", "--consistency", "snapshot-isolation"])
    assert r.exit_code == 0, r.output
    assert "allowed by snapshot-isolation: G2-item" in r.output


def test_cli_reads_completions_only_one_per_line(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(
        "{:type :ok, :value [[:append 5 3] [:r 6 []]]}\n"
        "{:type :ok, :value [[:append 6 4] [:r 5 []]]}\n"
        "{:type :ok, :value [[:r 5 [3]] [:r 6 [4]]]}\n"
    )
    r = _run([str(f), "--model", "list-append", "--consistency", "serializable"])
    assert r.exit_code == 1 and "G2-item" in r.output, r.output


def test_cli_reads_chaos_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "history.jsonl"
    lines = [{"format": "chaos.history", "version": 1}]
    for i, (p, t, v) in enumerate(
        [
            (0, "invoke", [["append", "x", 1]]),
            (0, "ok", [["append", "x", 1]]),
            (1, "invoke", [["r", "x", None]]),
            (1, "ok", [["r", "x", []]]),
            (2, "invoke", [["r", "x", None]]),
            (2, "ok", [["r", "x", [1]]]),
        ]
    ):
        lines.append({"index": i, "time": i / 10, "process": p, "type": t, "f": "txn", "value": v})
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = _run([str(f), "--model", "list-append"])  # strict-serializable by default
    assert r.exit_code == 1, r.output
    assert "G-single-realtime" in r.output
    r = _run([str(f), "--model", "list-append", "--consistency", "serializable"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{:type :ok, :value [[:append 1 2] [:bogus 1 2]]}\n",
            "op 0 (line 1), micro-op 1: unknown",
        ),
        ("{:type :ok, :value [[:append 1]]}\n", "not a [f key value] triple"),
        ("{:type :ok, :value 7}\n", "a txn's value must be a list"),
        ("{:type :ok, :value [[:r 1 [1]]]}\n{:type :ok :value [[:r 1 [1]]\n", "line 2: not EDN"),
        ("{:type :done, :value []}\n", ":type must be"),
        ("{:type :ok, :value [[:append {:a 1} 2]]}\n", "must not be a map"),
        ("{:type :ok, :value [[:r 1 5]]}\n", "returned 5, not a list"),
        (
            "{:type :invoke, :process 0, :value [[:append 1 2]]}\n"
            "{:type :ok, :process 0, :value [[:r 1 [2]]]}\n",
            "op 1 (line 2): the completion's micro-ops do not match its invocation op 0",
        ),
    ],
)
def test_cli_bad_transactions_exit_3_naming_the_op(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "h.edn"
    f.write_text(text)
    r = _run([str(f), "--model", "list-append"])
    assert r.exit_code == 3, r.output
    assert message in r.output
    assert "Traceback" not in r.output


def test_cli_refuses_options_that_mean_nothing_for_transactions(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text("{:type :ok, :value [[:append 1 2]]}\n")
    r = _run([str(f), "--model", "list-append", "--init", "0"])
    assert r.exit_code == 3 and "--init=0: not with --model list-append" in r.output
    r = _run([str(f), "--model", "cas-register", "--consistency", "serializable"])
    assert r.exit_code == 3 and "--consistency applies to list-append" in r.output
    r = _run([str(f), "--model", "list-append", "--consistency", "linearisable"])
    assert r.exit_code == 3 and "unknown consistency model" in r.output


def test_cli_history_with_no_transaction_is_unknown(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text("{:type :fail, :value [[:append 1 2]]}\n")
    r = _run([str(f), "--model", "list-append"])
    assert r.exit_code == 2, r.output


@pytest.mark.parametrize(
    "text",
    [
        # a list, a comment before it, a discarded form, a map over two lines
        "; comment\n({:type :ok, :value [[:append 5 3] [:r 6 []]]}\n"
        " #_ {:type :ok, :value [[:r 5 [9]]]}\n {:type :ok,\n  :value [[:append 6 4] [:r 5 []]]}\n"
        " {:type :ok, :value [[:r 5 [3]] [:r 6 [4]]]})\n",
        # Jepsen's records, one per line
        "#jepsen.history.Op{:type :ok, :value [[:append 5 3] [:r 6 []]], :index 0}\n"
        "#jepsen.history.Op{:type :ok, :value [[:append 6 4] [:r 5 []]], :index 1}\n"
        "#jepsen.history.Op{:type :ok, :value [[:r 5 [3]] [:r 6 [4]]], :index 2}\n",
        # top-level forms with no enclosing collection, commas as whitespace
        "{:type :ok, :f :txn, :value [[:append 5 3], [:r 6 []]]},\n"
        "{:type :ok, :f :txn, :value [[:append 6 4], [:r 5 nil]]},\n"
        "{:type :ok, :f :txn, :value [[:r 5 [3]], [:r 6 [4]]]}\n",
    ],
)
def test_cli_reads_the_edn_shapes_jepsen_writes(tmp_path: Path, text: str) -> None:
    f = tmp_path / "h.edn"
    f.write_text(text)
    r = _run([str(f), "--model", "list-append", "--consistency", "serializable"])
    assert r.exit_code == 1, r.output
    assert "G2-item: T1 = op 0 (ok); T2 = op 1 (ok)." in r.output
    r = _run([str(f), "--model", "list-append", "--consistency", "snapshot-isolation"])
    assert r.exit_code == 0, r.output


def simulate_si(rng: random.Random, n: int, procs: int, keys: int) -> list[RawOp]:
    """A snapshot-isolation store: a transaction reads the committed state as of its start (and
    its own appends), and commits at its completion unless another transaction committed an
    append to one of its keys since it started (first committer wins: then it fails). Write
    skew (G2-item) happens; nothing snapshot isolation forbids can."""
    store: dict[int, list[int]] = {}
    version: dict[int, int] = {}  # key -> commit count
    commits = 0
    counter = iter(range(1, 10**9))
    ops: list[RawOp] = []
    pending: dict[int, dict[str, Any]] = {}
    left = n

    def emit(t: str, p: int, v: Any) -> None:
        ops.append(RawOp(pos=len(ops), index=len(ops), process=p, type=t, f="txn", value=v))

    while left or pending:
        idle = [p for p in range(procs) if p not in pending] if left else []
        if idle and (not pending or rng.random() < 0.5):
            p = rng.choice(idle)
            left -= 1
            mops = [
                ["r", rng.randrange(keys), None]
                if rng.random() < 0.5
                else ["append", rng.randrange(keys), next(counter)]
                for _ in range(rng.randint(1, 4))
            ]
            snap = {k: list(v) for k, v in store.items()}
            pending[p] = {"mops": mops, "snap": snap, "start": dict(version), "at": commits}
            emit("invoke", p, mops)
            continue
        p = rng.choice(list(pending))
        x = pending.pop(p)
        local = x["snap"]
        done, written = [], set()
        for f, k, v in x["mops"]:
            if f == "r":
                done.append(["r", k, list(local.get(k, []))])
            else:
                local.setdefault(k, []).append(v)
                written.add(k)
                done.append([f, k, v])
        if any(version.get(k, 0) != x["start"].get(k, 0) for k in written):
            emit("fail", p, x["mops"])
            continue
        for k in written:
            store.setdefault(k, []).extend(v for v in local[k] if v not in store.get(k, []))
            version[k] = version.get(k, 0) + 1
        commits += 1
        emit("ok", p, done)
    return ops


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), procs=st.integers(2, 5),
       keys=st.integers(1, 3))  # fmt: skip
def test_a_snapshot_isolation_store_is_snapshot_isolation(
    seed: int, n: int, procs: int, keys: int
) -> None:
    h = simulate_si(random.Random(seed), n, procs, keys)
    r = check(h, "snapshot-isolation")
    if r.stats["ordered_pairs"] == 0:  # no dependency at all: nothing proven either way (Elle)
        assert r.verdict is Verdict.UNKNOWN and not r.anomalies
        return
    assert r.verdict is Verdict.VALID, [a.get("explanation") for a in r.anomalies][:2]


def test_a_snapshot_isolation_store_shows_write_skew_under_serializable() -> None:
    """The same store is not serializable: over a few seeds, write skew (G2-item) is found —
    the property test above has power."""
    kinds: set[str] = set()
    for seed in range(40):
        r = check(simulate_si(random.Random(seed), 40, 4, 2), "serializable")
        kinds |= {a["type"] for a in r.anomalies if a["forbidden"]}
    assert "G2-item" in kinds, kinds
    assert not kinds - {"G2-item"}, kinds


def test_cli_jsonl_with_unreadable_lines(tmp_path: Path) -> None:
    head = json.dumps({"format": "chaos.history", "version": 1}) + "\n"
    ok = [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "txn",
         "value": [["append", 1, 1]]},
        {"index": 1, "time": 0.1, "process": 0, "type": "ok", "f": "txn",
         "value": [["append", 1, 1]]},
    ]  # fmt: skip
    f = tmp_path / "history.jsonl"
    f.write_text(head + "not json\n" + "".join(json.dumps(x) + "\n" for x in ok))
    r = _run([str(f), "--model", "list-append"])
    assert r.exit_code == 2, r.output  # a line was lost: valid becomes unknown
    assert "verdict: unknown (1 unreadable line(s) skipped)" in r.output
    f.write_text(head + "not json\n{also not}\n")
    r = _run([str(f), "--model", "list-append"])
    assert r.exit_code == 3 and "no readable op in" in r.output, r.output


def test_cli_finds_the_elle_papers_example(tmp_path: Path) -> None:
    """The example history of Kingsbury & Alvaro's paper (completions only, no process): T4's
    read of key 255 misses T2's append of 8, which T3 read; T4's append of 3 to key 256, which
    no read shows, follows T3's append of 4, the last one read. A G-single."""
    f = tmp_path / "paper.edn"
    f.write_text(
        "{:index 1 :type :ok :value [[:append 253 1] [:append 253 3] [:append 253 4] "
        "[:append 255 2] [:append 255 3] [:append 255 4] [:append 255 5] [:append 256 1] "
        "[:append 256 2]]}\n"
        "{:index 3 :type :ok, :value [[:append 255 8] [:r 253 [1 3 4]]]}\n"
        "{:index 5 :type :ok, :value [[:append 256 4] [:r 255 [2 3 4 5 8]] [:r 256 [1 2 4]] "
        "[:r 253 [1 3 4]]]}\n"
        "{:index 7 :type :ok :value [[:append 250 10] [:r 253 [1 3 4]] [:r 255 [2 3 4 5]] "
        "[:append 256 3]]}\n"
    )
    r = _run([str(f), "--model", "list-append", "--consistency", "serializable", "--json"])
    assert r.exit_code == 1, r.output
    (res,) = json.loads(r.output)["results"]
    (g,) = [a for a in res["anomalies"] if a["type"] == "G-single"]
    assert sorted(g["cycle"]) == [3, 5, 7]
    texts = " ".join(s["text"] for s in g["steps"])
    assert "read of key 255 ([2 3 4 5]) missed" in texts and "append of 8 (rw)" in texts
    assert "append of 3 to key 256, which no read shows, came after" in texts
    r = _run([str(f), "--model", "list-append", "--consistency", "read-committed"])
    assert r.exit_code == 0, r.output
