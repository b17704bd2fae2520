"""The register models' one-pass records (chaos.checkers.register_records) against the plain path
(the model's ``encode`` and ``read_only`` per op, ``linearizable._records``): the same records,
and the same verdicts and evidence from ``check_linearizable``, on random multi-key histories —
valid ones (a register simulated per key) and invalid ones (outcomes drawn at random) — under
every register model and semantics; and a per-key brute force agrees with both."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from chaos.checkers import linearizable, models
from chaos.checkers.linearizable import _NEVER, _pair, _records, check_linearizable
from chaos.checkers.register_records import register_records
from chaos.checkers.verdict import Verdict
from chaos.histories.ops import Op, OpType
from tests.unit.test_linearizable import _brute_force

MODELS = {
    "cas-register": lambda: models.cas_register(),
    "cas-register knossos": lambda: models.cas_register(nil_read="any", failed_cas="absent"),
    "cas-register init 0": lambda: models.cas_register(0),
    "register": lambda: models.register(),
    "register nil any": lambda: models.register(nil_read="any"),
}


def _history(rng: random.Random, *, keys: int, n: int, simulate: bool, cas: bool) -> list[Op]:
    """Jepsen-independent ops on ``keys`` keys by 4 processes: with ``simulate``, each op takes
    effect at its completion (linearizable, but for the drawn timeouts and errors); otherwise
    reads and compares see random values. Timeouts (info), failures with and without an
    error, ops never completed, nil reads, a key that is a keyword-like string, a value a list."""
    ops: list[Op] = []
    state: dict[Any, Any] = {}
    busy: dict[int, tuple[str, Any, Any]] = {}
    key_names = [0, 1, "k", 7, (1, 2)][:keys]
    fs = ["read", "write", "cas"] if cas else ["read", "write"]

    def add(p: int, t: str, f: str, v: Any, error: str | None = None) -> None:
        ops.append(
            Op(
                index=len(ops),
                time=len(ops) * 0.01,
                process=p,
                type=OpType(t),
                f=f,
                value=v,
                error=error,
            )
        )

    for _ in range(n):
        p = rng.randrange(4)
        if p not in busy:
            f, k = rng.choice(fs), rng.choice(key_names)
            arg = None if f == "read" else rng.randrange(3)
            if f == "cas":
                arg = [rng.randrange(3), rng.randrange(3)]
            if f == "write" and rng.random() < 0.05:
                arg = [1, 2]  # a list value: frozen, not an int
            busy[p] = (f, k, arg)
            add(p, "invoke", f, [k, arg])
            continue
        f, k, arg = busy.pop(p)
        cur = state.get(k)
        r = rng.random()
        if r < 0.08:
            if simulate and f != "read" and rng.random() < 0.5:
                state[k] = arg if f == "write" else arg[1] if cur == arg[0] else cur
            add(p, "info", f, [k, arg], "timeout")
        elif r < 0.12:
            add(p, "fail", f, [k, arg], "refused")  # an error: it did not run
        elif f == "read":
            seen = cur if simulate else rng.choice([None, 0, 1, 2])
            add(p, "ok", f, [k, seen])
        elif f == "write":
            state[k] = arg
            add(p, "ok", f, [k, arg])
        elif (cur == arg[0]) if simulate else rng.random() < 0.5:
            state[k] = arg[1]
            add(p, "ok", f, [k, arg])
        else:
            add(p, "fail", f, [k, arg])  # the compare failed: no error
    return ops  # ops still busy never complete: indeterminate


def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linearizable, "register_records", lambda *a: None)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_one_pass_records_are_the_plain_paths(name: str) -> None:
    model = MODELS[name]()
    assert model.register is not None
    rng = random.Random(name)
    for i in range(300):
        ops = _history(
            rng, keys=1 + i % 5, n=10 + i % 60, simulate=i % 2 == 0, cas=model.register.with_cas
        )
        p = _pair(ops)
        fast = register_records(
            model.register, p.invokes, p.completions, p.invoke_at, p.completion_at, _NEVER
        )
        assert fast == _records(p, model, True), i


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_fast_and_plain_paths_give_the_same_verdicts(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(f"verdicts {name}")
    model = MODELS[name]()
    assert model.register is not None
    histories = [
        _history(
            rng, keys=1 + i % 5, n=20 + i % 80, simulate=i % 3 != 0, cas=model.register.with_cas
        )
        for i in range(300)
    ]
    fast = [check_linearizable(h, model, independent=True) for h in histories]
    _plain(monkeypatch)
    plain = [check_linearizable(h, model, independent=True) for h in histories]
    verdicts = [r.verdict for r in fast]
    assert verdicts == [r.verdict for r in plain]
    assert [(r.summary, r.anomalies) for r in fast] == [(r.summary, r.anomalies) for r in plain]
    # the sample holds both answers, so that the comparison can fail either way
    assert verdicts.count(Verdict.VALID) >= 30 and verdicts.count(Verdict.INVALID) >= 30


@pytest.mark.parametrize("name", ["cas-register", "cas-register knossos", "register"])
def test_both_paths_agree_with_the_brute_force_per_key(name: str) -> None:
    """P-compositionality: the history is linearizable iff each key's sub-history is, which the
    brute force of tests/unit/test_linearizable.py decides by definition."""
    rng = random.Random(f"brute {name}")
    model = MODELS[name]()
    assert model.register is not None
    seen = set()
    for i in range(200):
        ops = _history(rng, keys=2, n=16, simulate=i % 2 == 0, cas=model.register.with_cas)
        got = check_linearizable(ops, model, independent=True).verdict
        if got is Verdict.UNKNOWN:  # nothing left to linearize
            continue
        by_key: dict[Any, list[Op]] = {}
        for op in ops:
            k, v = op.value
            by_key.setdefault(repr(k), []).append(msgspec.structs.replace(op, value=v))
        want = all(_brute_force(sub, model) for sub in by_key.values())
        assert got is (Verdict.VALID if want else Verdict.INVALID), i
        seen.add(got)
    assert seen == {Verdict.VALID, Verdict.INVALID}


def test_outside_its_cases_it_gives_up_and_the_plain_path_names_the_op() -> None:
    model = models.cas_register()
    assert model.register is not None
    for f, v, said in (
        ("dequeue", [0, None], "has f='dequeue', which the cas-register model does not know"),
        ("cas", [0, 5], "cas value must be [expected new], got 5"),
    ):
        ops = [
            Op(index=0, time=0.0, process=0, type=OpType.INVOKE, f=f, value=v),
            Op(index=1, time=0.1, process=0, type=OpType.OK, f=f, value=v),
        ]
        p = _pair(ops)
        got = register_records(
            model.register, p.invokes, p.completions, p.invoke_at, p.completion_at, _NEVER
        )
        assert got is None
        r = check_linearizable(ops, model, independent=True)
        assert r.verdict is Verdict.UNKNOWN and said in r.summary
    # a register without cas does not know cas either
    reg = models.register()
    ops = [
        Op(index=0, time=0.0, process=0, type=OpType.INVOKE, f="cas", value=[0, [1, 2]]),
        Op(index=1, time=0.1, process=0, type=OpType.OK, f="cas", value=[0, [1, 2]]),
    ]
    assert reg.register is not None
    p = _pair(ops)
    assert register_records(reg.register, p.invokes, p.completions, p.invoke_at,
                            p.completion_at, _NEVER) is None  # fmt: skip
