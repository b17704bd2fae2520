"""Linearizability checker: models, info semantics, keys, budgets, evidence, Porcupine's histories."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.checkers import models
from chaos.checkers.linearizable import check_linearizable, check_partitions, prepare
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from chaos.histories import edn, jepsen_log
from chaos.histories.ops import Op, OpType
from tests.corpus import PORCUPINE
from tests.fuzz import examples


def h(*events: tuple[Any, ...]) -> list[Op]:
    """Build a history from (process, type, f, value[, extra]) tuples."""
    ops = []
    for i, e in enumerate(events):
        p, t, f, v = e[:4]
        extra = e[4] if len(e) > 4 else {}
        error = extra.pop("error", None) if extra else None
        ops.append(
            Op(
                index=i,
                time=i * 0.1,
                process=p,
                type=OpType(t),
                f=f,
                value=v,
                error=error,
                extra=extra,
            )
        )
    return ops


# ------------------------------------------------------------------ registers


def test_register_sequential_ok_and_stale_read_fails() -> None:
    ok = h(
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
    )
    bad = h(
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", None),
    )
    assert check_linearizable(ok, "register").verdict is Verdict.VALID
    r = check_linearizable(bad, "register")
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["op"]["op"] == "read() -> nil"
    assert r.anomalies[0]["prefix_length"] == 1  # the write linearized, then the read is stuck


def test_concurrent_ops_may_linearize_either_way() -> None:
    # write 2 overlaps both reads: read 1 then read 2 is fine, read 2 then read 1 is not.
    ok = h(
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (0, "invoke", "write", 2),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 2),
        (0, "ok", "write", 2),
    )
    bad = h(
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (0, "invoke", "write", 2),
        (1, "invoke", "read", None),
        (1, "ok", "read", 2),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
        (0, "ok", "write", 2),
    )
    assert check_linearizable(ok, "register").verdict is Verdict.VALID
    assert check_linearizable(bad, "register").verdict is Verdict.INVALID


def test_cas_register_success_and_failed_compare() -> None:
    ok = h(
        (0, "invoke", "write", 0),
        (0, "ok", "write", 0),
        (0, "invoke", "cas", [0, 5]),
        (0, "ok", "cas", [0, 5]),
        (1, "invoke", "cas", [0, 7]),
        (1, "fail", "cas", [0, 7]),
        (1, "invoke", "read", None),
        (1, "ok", "read", 5),
    )
    # A cas that succeeded although the register did not hold its expected value.
    bad = h(
        (0, "invoke", "write", 3),
        (0, "ok", "write", 3),
        (0, "invoke", "cas", [0, 5]),
        (0, "ok", "cas", [0, 5]),
    )
    # A cas that reported a failed compare although the register held the expected value.
    bad_fail = h(
        (0, "invoke", "write", 0),
        (0, "ok", "write", 0),
        (0, "invoke", "cas", [0, 5]),
        (0, "fail", "cas", [0, 5]),
    )
    assert check_linearizable(ok, "cas-register").verdict is Verdict.VALID
    assert check_linearizable(bad, "cas-register").verdict is Verdict.INVALID
    assert check_linearizable(bad_fail, "cas-register").verdict is Verdict.INVALID
    # A fail with an error (the request never ran) is just "did not happen".
    refused = h(
        (0, "invoke", "write", 0),
        (0, "ok", "write", 0),
        (0, "invoke", "cas", [0, 5]),
        (0, "fail", "cas", [0, 5], {"error": "connection refused"}),
    )
    assert check_linearizable(refused, "cas-register").verdict is Verdict.VALID


def test_register_model_rejects_cas() -> None:
    hist = h((0, "invoke", "cas", [0, 1]), (0, "ok", "cas", [0, 1]))
    r = check_linearizable(hist, "register")
    assert r.verdict is Verdict.UNKNOWN
    assert "cas" in r.summary


# ------------------------------------------------------ indeterminate ops


@pytest.mark.parametrize("seen", [None, 1])
def test_info_write_may_or_may_not_have_happened(seen: Any) -> None:
    hist = h(
        (0, "invoke", "write", 1),
        (0, "info", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", seen),
    )
    assert check_linearizable(hist, "register").verdict is Verdict.VALID


def test_info_write_cannot_take_effect_before_its_invoke() -> None:
    hist = h(
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
        (0, "invoke", "write", 1),
        (0, "info", "write", 1),
    )
    assert check_linearizable(hist, "register").verdict is Verdict.INVALID


def test_invoke_without_completion_counts_as_info() -> None:
    hist = h(
        (0, "invoke", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
    )
    assert check_linearizable(hist, "register").verdict is Verdict.VALID
    flip = h(
        (0, "invoke", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", None),
    )
    assert check_linearizable(flip, "register").verdict is Verdict.INVALID


def test_failed_ops_did_not_happen() -> None:
    hist = h(
        (0, "invoke", "write", 1),
        (0, "fail", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
    )
    assert check_linearizable(hist, "register").verdict is Verdict.INVALID
    hist2 = h(
        (0, "invoke", "write", 1),
        (0, "fail", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", None),
    )
    assert check_linearizable(hist2, "register").verdict is Verdict.VALID


def test_nemesis_ops_are_ignored_and_empty_history_is_unknown() -> None:
    hist = h(("nemesis", "info", "pause", None), ("nemesis", "info", "pause", {"node": "n1"}))
    assert check_linearizable(hist, "register").verdict is Verdict.UNKNOWN


# ---------------------------------------------------------------- other models


def test_kv_keys_are_independent_and_append_concatenates() -> None:
    ok = h(
        (0, "invoke", "append", "a", {"key": "x"}),
        (0, "ok", "append", "a", {"key": "x"}),
        (1, "invoke", "append", "b", {"key": "y"}),
        (1, "ok", "append", "b", {"key": "y"}),
        (0, "invoke", "append", "c", {"key": "x"}),
        (0, "ok", "append", "c", {"key": "x"}),
        (1, "invoke", "get", None, {"key": "x"}),
        (1, "ok", "get", "ac", {"key": "x"}),
        (1, "invoke", "get", None, {"key": "z"}),
        (1, "ok", "get", "", {"key": "z"}),
    )
    r = check_linearizable(ok, "kv")
    assert r.verdict is Verdict.VALID and r.stats["keys"] == 3
    bad = h(
        (0, "invoke", "put", "a", {"key": "x"}),
        (0, "ok", "put", "a", {"key": "x"}),
        (1, "invoke", "get", None, {"key": "y"}),
        (1, "ok", "get", "a", {"key": "y"}),
    )
    r = check_linearizable(bad, "kv")
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["key"] == "y"


def test_jepsen_independent_tuples_split_by_key() -> None:
    ok = h(
        (0, "invoke", "write", [1, 5]),
        (0, "ok", "write", [1, 5]),
        (1, "invoke", "read", [2, None]),
        (1, "ok", "read", [2, None]),
        (1, "invoke", "cas", [1, [5, 6]]),
        (1, "ok", "cas", [1, [5, 6]]),
    )
    assert check_linearizable(ok, "cas-register", independent=True).verdict is Verdict.VALID
    # not asked: one register of pair values (a note says how to ask)
    r = check_linearizable(ok, "cas-register")
    assert r.verdict is Verdict.INVALID and "--independent" in r.stats["note"]
    bad = h(
        (0, "invoke", "write", [1, 5]),
        (0, "ok", "write", [1, 5]),
        (1, "invoke", "read", [2, None]),
        (1, "ok", "read", [2, 5]),
    )
    r = check_linearizable(bad, "cas-register", independent=True)
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["key"] == 2


def test_independent_needs_a_key_value_pair_in_every_invoke() -> None:
    m = models.cas_register()
    pairs = [(0, "invoke", "write", [1, 5]), (0, "ok", "write", [1, 5])]
    # a value that is not a [k v] pair anywhere, even after a read invoked with a value (which
    # stops the keyed-look note, not the check), is named by its op
    for odd in (5, [1, 2, 3], "ab", None):
        ops = h(
            *pairs,
            (1, "invoke", "read", [2, 3]),
            (1, "ok", "read", [2, 3]),
            (2, "invoke", "write", odd),
            (2, "ok", "write", odd),
        )
        with pytest.raises(ValueError, match=r"op 4 has value .* not an independent"):
            prepare(ops, m, independent=True)
    parts, stats = prepare(h(*pairs), m, independent=True)
    assert stats["keys"] == 1 and parts[0].key == 1
    # the note needs a read invoked with [k nil] and no read invoked with a value
    for reads, noted in (([2, None],), True), (([2, None], [3, 1]), False), (([3, 1],), False):
        ops = h(*pairs, *((1, "invoke", "read", v) for v in reads))
        assert ("note" in prepare(ops, m)[1]) is noted, reads


def test_set_model() -> None:
    ok = h(
        (0, "invoke", "add", 1),
        (0, "ok", "add", 1),
        (1, "invoke", "add", 2),
        (2, "invoke", "read", None),
        (2, "ok", "read", [1]),
        (1, "ok", "add", 2),
        (2, "invoke", "read", None),
        (2, "ok", "read", [2, 1]),
    )
    bad = h(
        (0, "invoke", "add", 1),
        (0, "ok", "add", 1),
        (2, "invoke", "read", None),
        (2, "ok", "read", []),
    )
    assert check_linearizable(ok, "set").verdict is Verdict.VALID
    assert check_linearizable(bad, "set").verdict is Verdict.INVALID


def test_queue_model_is_fifo() -> None:
    ok = h(
        (0, "invoke", "enqueue", 1),
        (0, "ok", "enqueue", 1),
        (0, "invoke", "enqueue", 2),
        (0, "ok", "enqueue", 2),
        (1, "invoke", "dequeue", None),
        (1, "ok", "dequeue", 1),
        (1, "invoke", "dequeue", None),
        (1, "ok", "dequeue", 2),
        (1, "invoke", "dequeue", None),
        (1, "ok", "dequeue", None),
    )
    bad = h(
        (0, "invoke", "enqueue", 1),
        (0, "ok", "enqueue", 1),
        (0, "invoke", "enqueue", 2),
        (0, "ok", "enqueue", 2),
        (1, "invoke", "dequeue", None),
        (1, "ok", "dequeue", 2),
    )
    assert check_linearizable(ok, "queue").verdict is Verdict.VALID
    r = check_linearizable(bad, "queue")
    assert r.verdict is Verdict.INVALID and r.anomalies[0]["op"]["op"] == "dequeue() -> 2"


def test_counter_model() -> None:
    ok = h(
        (0, "invoke", "add", 2),
        (1, "invoke", "read", None),
        (1, "ok", "read", 2),
        (0, "ok", "add", 2),
        (0, "invoke", "increment", None),
        (0, "ok", "increment", None),
        (1, "invoke", "read", None),
        (1, "ok", "read", 3),
    )
    bad = h(
        (0, "invoke", "add", 2),
        (0, "ok", "add", 2),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
    )
    assert check_linearizable(ok, "counter").verdict is Verdict.VALID
    assert check_linearizable(bad, "counter").verdict is Verdict.INVALID


# ------------------------------------------------------- budget and early stop


def _hard_history(n: int) -> list[Op]:
    """Many concurrent indeterminate writes and no way to linearize the last read: the search
    has to look at exponentially many subsets before it can say no."""
    events: list[tuple[Any, ...]] = []
    for p in range(n):
        events.append((p, "invoke", "write", p))
    for p in range(n):
        events.append((p, "info", "write", p))
    for i in range(n):
        events.append((100 + i, "invoke", "read", None))
        events.append((100 + i, "ok", "read", i))
    # 0 was written (before every read began), so only the search can tell it is stale
    events.append((999, "invoke", "read", None))
    events.append((999, "ok", "read", 0))
    return h(*events)


def test_state_budget_gives_unknown() -> None:
    r = check_linearizable(_hard_history(14), "register", max_states=2000)
    assert r.verdict is Verdict.UNKNOWN
    assert "states" in r.summary


def test_time_budget_gives_unknown() -> None:
    t0 = time.monotonic()
    r = check_linearizable(_hard_history(16), "register", time_limit=0.2, max_states=None)
    assert r.verdict is Verdict.UNKNOWN
    assert "time" in r.summary
    assert time.monotonic() - t0 < 5


def test_illegal_key_stops_search_of_expensive_key() -> None:
    hard = [
        Op(
            index=o.index,
            time=o.time,
            process=o.process,
            type=o.type,
            f=o.f,
            value=o.value,
            extra={"key": "hard"},
        )
        for o in _hard_history(18)
    ]
    bad = h(
        (500, "invoke", "put", "a", {"key": "easy"}),
        (500, "ok", "put", "a", {"key": "easy"}),
        (501, "invoke", "get", None, {"key": "easy"}),
        (501, "ok", "get", "b", {"key": "easy"}),
    )
    t0 = time.monotonic()
    r = check_linearizable(hard + bad, "kv", time_limit=30, max_states=None)
    assert r.verdict is Verdict.INVALID
    assert r.anomalies[0]["key"] == "easy"
    assert time.monotonic() - t0 < 2


# ------------------------------------------- cross-check against brute force


def _extend(
    part: Any,
    model: models.Model,
    before: dict[int, set[int]],
    det: set[int],
    placed: frozenset[int],
    state: Any,
) -> bool:
    if det <= placed:
        return True
    for o in range(len(part.inputs)):
        if o in placed or not before[o] <= placed:
            continue
        ok, new = model.step(state, part.inputs[o], part.outputs[o])
        if ok and _extend(part, model, before, det, placed | {o}, new):
            return True
    return False


def _brute_force(history: list[Op], model: models.Model) -> bool:
    """Linearizability by definition, without the checker's search: try every sequence of
    distinct ops (depth first, no memo) that respects real time — an op may go next only when
    every determinate op that returned before it was invoked is already placed — and accept
    when the model takes it and every determinate op is placed."""
    parts, _ = prepare(history, model)
    for part in parts:
        n = len(part.inputs)
        call = {e >> 1: i for i, e in enumerate(part.events) if not e & 1}
        ret = {e >> 1: i for i, e in enumerate(part.events) if e & 1}
        det = {i for i in range(n) if part.determinate[i]}
        before = {o: {a for a in ret if ret[a] < call[o]} for o in range(n)}
        if not _extend(part, model, before, det, frozenset(), model.init):
            return False
    return True


_OPS = {
    "cas-register": {
        "read": lambda d: None,
        "write": lambda d: d(st.integers(0, 1)),
        "cas": lambda d: [d(st.integers(0, 1)), d(st.integers(0, 1))],
    },
    "queue": {"enqueue": lambda d: d(st.integers(0, 2)), "dequeue": lambda d: None},
    "set": {"add": lambda d: d(st.integers(0, 2)), "read": lambda d: None},
}
_OUTPUTS = {
    "read": lambda d: d(st.sampled_from([None, 0, 1])),
    "dequeue": lambda d: d(st.sampled_from([None, 0, 1, 2])),
}


@st.composite
def histories(draw: st.DrawFn, model: str) -> list[Op]:
    fs = _OPS[model]
    events: list[tuple[Any, ...]] = []
    outstanding: dict[int, tuple[str, Any]] = {}
    invokes = 0
    for _ in range(draw(st.integers(2, 16))):
        p = draw(st.integers(0, 2))
        if p in outstanding:
            f, v = outstanding.pop(p)
            t = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
            if model == "set" and f == "read":
                v = sorted(draw(st.sets(st.integers(0, 2))))
            elif f in _OUTPUTS:
                v = _OUTPUTS[f](draw)
            events.append((p, t, f, v))
        elif invokes < 7:
            invokes += 1
            f = draw(st.sampled_from(sorted(fs)))
            v = fs[f](draw)
            outstanding[p] = (f, v)
            events.append((p, "invoke", f, v))
    return h(*events)


@pytest.mark.parametrize("model", sorted(_OPS))
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_search_agrees_with_brute_force(model: str, data: st.DataObject) -> None:
    history = data.draw(histories(model))
    m = models.MODELS[model]()
    expected = Verdict.VALID if _brute_force(history, m) else Verdict.INVALID
    got = check_linearizable(history, m).verdict
    if got is Verdict.UNKNOWN:  # no client op left to check
        assert not prepare(history, m)[0]
    else:
        assert got is expected


def _legal_prefix(part: Any, model: models.Model, prefix: list[int]) -> bool:
    """Whether ``prefix`` (op ids of ``part``) is a linearization of its ops: distinct, each
    taken by the model in turn, and every determinate op that returned before one's call is
    placed before it."""
    call = {e >> 1: i for i, e in enumerate(part.events) if not e & 1}
    ret = {e >> 1: i for i, e in enumerate(part.events) if e & 1}
    placed: set[int] = set()
    state = model.init
    for o in prefix:
        if o in placed or any(ret[a] < call[o] and a not in placed for a in ret):
            return False
        ok, state = model.step(state, part.inputs[o], part.outputs[o])
        if not ok:
            return False
        placed.add(o)
    return True


@pytest.mark.parametrize("model", sorted(_OPS))
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_longest_prefix_is_a_linearization(model: str, data: st.DataObject) -> None:
    """The evidence of a failed key, its longest linearizable prefix, is kept apart from the
    search's stack (only what changed since it was last taken is copied): it must be a real
    linearization of its ops that the blocked op is not part of."""
    m = models.MODELS[model]()
    parts, _ = prepare(data.draw(histories(model)), m)
    res = check_partitions(parts, m)
    if res.verdict is Verdict.INVALID:
        assert res.failed is not None and res.outcome is not None
        assert _legal_prefix(res.failed, m, res.outcome.longest)
        assert res.outcome.blocked not in res.outcome.longest


# -------------------------------------------------- Porcupine's recorded histories


def _expected() -> list[tuple[str, str]]:
    if not (PORCUPINE / "expected.tsv").exists():
        return []
    rows = (PORCUPINE / "expected.tsv").read_text().splitlines()
    return [tuple(r.split("\t")) for r in rows if r.strip()]  # type: ignore[misc]


@pytest.mark.corpus
def test_porcupine_data_is_there() -> None:
    assert len(_expected()) == 108, f"expected.tsv under {PORCUPINE} does not list 108 histories"


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name,expected", _expected() if PORCUPINE.exists() else [("(corpus absent)", "")]
)
def test_porcupine_history_verdict(name: str, expected: str) -> None:
    path = PORCUPINE / name
    if name.startswith("jepsen/"):
        ops, problems = jepsen_log.read_log(path)
        model = models.cas_register()
    else:
        ops, problems = edn.read_history(path)
        model = models.kv()
    assert problems == []
    r = check_linearizable(ops, model)
    want = Verdict.VALID if expected == "linearizable" else Verdict.INVALID
    assert r.verdict is want, r.summary
    # and what a script sees: the exit code of `chaos check FILE --model M`
    args = [str(path), "--model", model.name, "--json"]
    res = CliRunner().invoke(check_file_command, args)
    assert res.exit_code == want.exit_code, res.output
    assert json.loads(res.output)["verdict"] == want.value


@pytest.mark.corpus
def test_c50_bad_is_illegal_quickly() -> None:
    ops, _ = edn.read_history(PORCUPINE / "kv" / "c50-bad.txt")
    r = check_linearizable(ops, models.kv())
    assert r.verdict is Verdict.INVALID
    ev = r.anomalies[0]
    assert ev["prefix_length"] > 0 and ev["op"]["invoke_index"] >= 0
    # "quickly" as work, not wall time (a busy machine stretches the latter): the search visits
    # 36k states here; one that lost its pruning visits millions before it gives up
    assert r.stats["states"] < 100_000, r.stats


@pytest.mark.corpus
def test_partitions_check_directly() -> None:
    ops, _ = jepsen_log.read_log(PORCUPINE / "jepsen" / "etcd_000.log")
    model = models.cas_register()
    parts, stats = prepare(ops, model)
    assert stats["keys"] == 1 and len(parts) == 1
    assert check_partitions(parts, model).verdict is Verdict.INVALID
