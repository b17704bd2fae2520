"""`chaos check --model`: Knossos' and Porcupine's semantics, model parameters, EDN equality,
independent tuples, the exit code of the model's verdict, and empty histories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaos.checkers import models
from chaos.checkers.linearizable import check_linearizable, prepare
from chaos.checkers.semantics import build_model, semantics
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from chaos.histories import edn
from chaos.histories.edn import Keyword
from chaos.histories.ops import Op, OpType


def h(*events: tuple[Any, ...]) -> list[Op]:
    """A history from (process, type, f, value[, error]) tuples."""
    return [
        Op(
            index=i,
            time=i * 0.1,
            process=e[0],
            type=OpType(e[1]),
            f=e[2],
            value=e[3],
            error=e[4] if len(e) > 4 else None,
        )
        for i, e in enumerate(events)
    ]


def both(history: list[Op], model: str = "cas-register") -> tuple[Verdict, Verdict]:
    """The verdicts under Knossos' and Porcupine's semantics."""
    return tuple(  # type: ignore[return-value]
        check_linearizable(history, build_model(model, semantics(s))).verdict
        for s in ("knossos", "porcupine")
    )


# ------------------------------------------------ the two semantics disagree, each way

# A read of nil after a write: Knossos' nil read matches any state; Porcupine's is "absent".
NIL_READ = h(
    (0, "invoke", "write", 1),
    (0, "ok", "write", 1),
    (1, "invoke", "read", None),
    (1, "ok", "read", None),
)
# A cas that reported a failed compare while the register held its expected value: Knossos
# drops the failed op, Porcupine keeps it as an observation that cannot be.
FAILED_CAS = h(
    (0, "invoke", "write", 1),
    (0, "ok", "write", 1),
    (1, "invoke", "cas", [1, 2]),
    (1, "fail", "cas", [1, 2]),
    (1, "invoke", "read", None),
    (1, "ok", "read", 1),
)
# A read of 0 before any write: Knossos' register starts at 0, Porcupine's absent.
READ_ZERO = h((0, "invoke", "read", None), (0, "ok", "read", 0))
# A cas from nil before any write: fine on an absent register, not on one holding 0.
CAS_FROM_NIL = h(
    (0, "invoke", "cas", [None, 1]),
    (0, "ok", "cas", [None, 1]),
    (0, "invoke", "read", None),
    (0, "ok", "read", 1),
)


def test_knossos_valid_porcupine_invalid() -> None:
    for history in (NIL_READ, FAILED_CAS, READ_ZERO):
        assert both(history) == (Verdict.VALID, Verdict.INVALID)


def test_porcupine_valid_knossos_invalid() -> None:
    assert both(CAS_FROM_NIL) == (Verdict.INVALID, Verdict.VALID)
    # and the reason is the starting value: Knossos' reading with init nil accepts it
    sem = semantics("knossos", init=None)
    assert check_linearizable(CAS_FROM_NIL, build_model("cas-register", sem)).verdict is (
        Verdict.VALID
    )


def test_each_switch_alone_decides_its_case() -> None:
    def verdict(history: list[Op], **kw: Any) -> Verdict:
        sem = semantics("porcupine", **kw)
        return check_linearizable(history, build_model("cas-register", sem)).verdict

    assert verdict(NIL_READ, nil_read="any") is Verdict.VALID
    assert verdict(NIL_READ, failed_cas="absent", init=0) is Verdict.INVALID
    assert verdict(FAILED_CAS, failed_cas="absent") is Verdict.VALID
    assert verdict(FAILED_CAS, nil_read="any", init=0) is Verdict.INVALID
    assert verdict(READ_ZERO, init=0) is Verdict.VALID
    assert verdict(READ_ZERO, nil_read="any", failed_cas="absent") is Verdict.INVALID


def test_init_for_kv_keys_and_counter() -> None:
    history = [
        Op(index=0, time=0, process=0, type=OpType.INVOKE, f="get", extra={"key": "x"}),
        Op(index=1, time=1, process=0, type=OpType.OK, f="get", value=5, extra={"key": "x"}),
    ]
    assert check_linearizable(history, models.kv()).verdict is Verdict.INVALID
    assert check_linearizable(history, models.kv(5)).verdict is Verdict.VALID
    reads = h((0, "invoke", "read", None), (0, "ok", "read", 3))
    assert check_linearizable(reads, models.counter()).verdict is Verdict.INVALID
    assert check_linearizable(reads, models.counter(3)).verdict is Verdict.VALID


def test_semantics_names_and_json() -> None:
    assert semantics().to_json() == {
        "name": "porcupine",
        "preset": "porcupine",
        "init": None,
        "nil_read": "value",
        "failed_cas": "observed",
    }
    k = semantics("knossos", init=Keyword("a"))
    assert k.name == "knossos (modified)" and k.to_json()["init"] == ":a"
    assert "init :a" in k.describe()
    with pytest.raises(ValueError, match="unknown semantics"):
        semantics("elle")


# ------------------------------------------------------------- EDN equality


@pytest.mark.parametrize(
    "written,read",
    [
        (1, True),
        (1, 1.0),
        (0, False),
        ("a", Keyword("a")),
        (Keyword("a"), "a"),
        ([1, 2], [1.0, 2]),
    ],
)
def test_values_of_different_types_are_different(written: Any, read: Any) -> None:
    history = h(
        (0, "invoke", "write", written),
        (0, "ok", "write", written),
        (1, "invoke", "read", None),
        (1, "ok", "read", read),
    )
    assert check_linearizable(history, "register").verdict is Verdict.INVALID
    ok = h(
        (0, "invoke", "write", written),
        (0, "ok", "write", written),
        (1, "invoke", "read", None),
        (1, "ok", "read", written),
    )
    assert check_linearizable(ok, "register").verdict is Verdict.VALID


def test_big_and_small_integers_are_one_number() -> None:
    # EDN's 1N and 1 are equal in Clojure; both read as a Python int
    history = edn.read_history_text(
        "{:type :invoke, :f :write, :value 1N, :process 0, :index 0}\n"
        "{:type :ok, :f :write, :value 1N, :process 0, :index 1}\n"
        "{:type :invoke, :f :read, :value nil, :process 1, :index 2}\n"
        "{:type :ok, :f :read, :value 1, :process 1, :index 3}\n"
    )[0]
    assert check_linearizable(history, "register").verdict is Verdict.VALID


def test_keywords_print_as_keywords() -> None:
    history = h(
        (0, "invoke", "write", Keyword("y")),
        (0, "ok", "write", Keyword("y")),
        (0, "invoke", "write", Keyword("x")),
        (0, "ok", "write", Keyword("x")),
        (1, "invoke", "read", None),
        (1, "ok", "read", Keyword("y")),
    )
    r = check_linearizable(history, "register")
    assert r.verdict is Verdict.INVALID
    assert "read() -> :y" in r.summary and "Keyword" not in r.summary
    assert r.anomalies[0]["state"] == ":x"
    s = check_linearizable(h((0, "invoke", "read", None), (0, "ok", "read", "s")), "register")
    assert 'read() -> "s"' in s.summary


# ------------------------------------------------------ independent [k v] values


PAIR_REGISTER = h(
    (0, "invoke", "write", [1, 2]),
    (0, "ok", "write", [1, 2]),
    (1, "invoke", "cas", [[1, 2], [3, 4]]),
    (1, "ok", "cas", [[1, 2], [3, 4]]),
)


def test_pairs_without_a_telling_read_are_one_register() -> None:
    r = check_linearizable(PAIR_REGISTER, "cas-register")
    assert r.verdict is Verdict.VALID and r.stats["independent"] is False
    # Declared independent, the same ops mean key 1 := 2, then cas on key [1 2]: not so.
    r = check_linearizable(PAIR_REGISTER, "cas-register", independent=True)
    assert r.verdict is Verdict.INVALID and "on key [1 2]" in r.summary


def test_keys_only_when_asked_and_a_note_when_the_history_looks_keyed() -> None:
    history = h(
        (0, "invoke", "write", [1, 5]),
        (0, "ok", "write", [1, 5]),
        (1, "invoke", "read", [2, None]),
        (1, "ok", "read", [2, None]),
    )
    # Looks keyed (a read invoked as [k nil]), but not asked: one register of pairs, on which
    # the read of [2 nil] is stale; the note says so and how to ask.
    parts, stats = prepare(history, models.cas_register())
    assert stats["independent"] is False and len(parts) == 1
    assert "--independent" in stats["note"]
    r = check_linearizable(history, "cas-register")
    assert r.verdict is Verdict.INVALID and "--independent" in r.stats["note"]
    parts, stats = prepare(history, models.cas_register(), independent=True)
    assert stats["independent"] is True and len(parts) == 2 and "note" not in stats
    # --no-independent said: no note (the user has answered the question)
    r = check_linearizable(history, "cas-register", independent=False)
    assert r.verdict is Verdict.INVALID and "note" not in r.stats
    # a history that does not look keyed gets no note
    assert "note" not in check_linearizable(PAIR_REGISTER, "cas-register").stats
    # a plain history declared independent is refused with the op that is not a pair
    r = check_linearizable(NIL_READ, "cas-register", independent=True)
    assert r.verdict is Verdict.UNKNOWN and "op 0" in r.summary


# ----------------------------------------------------------- empty histories


def test_nothing_to_linearize_is_valid_or_unknown_as_asked() -> None:
    nemesis_only = h(("nemesis", "info", "pause", None))
    r = check_linearizable(nemesis_only, "register", empty=Verdict.VALID)
    assert r.verdict is Verdict.VALID and "Knossos and Porcupine" in r.summary
    r = check_linearizable(nemesis_only, "register")
    assert r.verdict is Verdict.UNKNOWN and "nothing to linearize" in r.summary
    # Knossos' nil reads alone leave nothing either
    reads = h((0, "invoke", "read", None), (0, "ok", "read", None))
    sem = semantics("knossos")
    r = check_linearizable(reads, build_model("register", sem), empty=Verdict.VALID)
    assert r.verdict is Verdict.VALID and r.stats["dropped"] == 1


# ------------------------------------------------------------------ the command


def _write(path: Path, history: list[Op]) -> Path:
    edn.write_history(path, history)
    return path


def _run(*args: str) -> Any:
    return CliRunner().invoke(check_file_command, list(args))


def test_command_semantics_switches_the_exit_code(tmp_path: Path) -> None:
    for name, history, knossos, porcupine in [
        ("nil-read", NIL_READ, 0, 1),
        ("failed-cas", FAILED_CAS, 0, 1),
        ("read-zero", READ_ZERO, 0, 1),
        ("cas-from-nil", CAS_FROM_NIL, 1, 0),
    ]:
        path = _write(tmp_path / f"{name}.edn", history)
        r = _run(str(path), "-m", "cas-register", "--semantics", "knossos")
        assert r.exit_code == knossos, (name, r.output)
        assert "semantics: knossos" in r.output
        r = _run(str(path), "-m", "cas-register", "--semantics", "porcupine", "--json")
        assert r.exit_code == porcupine, (name, r.output)
        doc = json.loads(r.output)
        assert doc["semantics"]["name"] == "porcupine" and doc["exit_code"] == porcupine
    path = tmp_path / "read-zero.edn"
    assert _run(str(path), "-m", "cas-register", "--init", "0").exit_code == 0
    assert _run(str(path), "-m", "cas-register", "--init", "0.0").exit_code == 1


def test_command_exit_code_is_the_models_verdict_stats_are_warnings(tmp_path: Path) -> None:
    # cas never succeeded: Jepsen's stats would fail the test; the model's answer is valid.
    history = h(
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (1, "invoke", "cas", [2, 3]),
        (1, "fail", "cas", [2, 3]),
    )
    path = _write(tmp_path / "h.edn", history)
    r = _run(str(path), "-m", "cas-register")
    assert r.exit_code == 0, r.output
    assert "warning: stats is unknown" in r.output and "never ok: cas" in r.output
    doc = json.loads(_run(str(path), "-m", "cas-register", "--json").output)
    assert doc["verdict"] == "valid" and doc["all_checkers_verdict"] == "unknown"
    assert doc["deciding"] == ["linearizable-cas-register"]
    assert any("never ok: cas" in w for w in doc["warnings"])
    assert [x["checker"] for x in doc["results"]] == [
        "linearizable-cas-register",
        "stats",
        "exceptions",
    ]
    # an invalid history still exits 1, whatever stats says
    bad = _write(tmp_path / "bad.edn", NIL_READ)
    assert _run(str(bad), "-m", "cas-register").exit_code == 1


def test_command_empty_history(tmp_path: Path) -> None:
    from chaos.checkers.offline import check_file

    path = _write(tmp_path / "e.edn", h(("nemesis", "info", "pause", None)))
    r = _run(str(path), "-m", "register")
    # one default for the command line and the API: unknown, saying why
    assert r.exit_code == 2 and "warning: linearizable-register: nothing to linearize" in r.output
    assert "the history decides nothing" in r.output
    (api, *_), _ = check_file(path, "register")
    assert api.verdict is Verdict.UNKNOWN and "decides nothing" in api.summary
    assert _run(str(path), "-m", "register", "--empty", "valid").exit_code == 0


def test_command_independent_override(tmp_path: Path) -> None:
    path = _write(tmp_path / "pairs.edn", PAIR_REGISTER)
    assert _run(str(path), "-m", "cas-register").exit_code == 0
    assert _run(str(path), "-m", "cas-register", "--no-independent").exit_code == 0
    assert _run(str(path), "-m", "cas-register", "--independent").exit_code == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (["-m", "queue", "--init", "1"], "--init applies to"),
        (["-m", "counter", "--init", ":a"], "starts at a number"),
        (["-m", "register", "--init", "{:a"], "neither a JSON nor an EDN value"),
    ],
)
def test_command_bad_options_exit_3(tmp_path: Path, args: list[str], message: str) -> None:
    path = _write(tmp_path / "h.edn", READ_ZERO)
    r = _run(str(path), *args)
    assert r.exit_code == 3 and message in r.output and "Traceback" not in r.output


def test_command_op_the_model_cannot_read_exits_3(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.edn", h((0, "invoke", "cas", 5), (0, "ok", "cas", 5)))
    r = _run(str(path), "-m", "cas-register")
    assert r.exit_code == 3 and "op 0" in r.output and "[expected new]" in r.output


def test_chaos_check_forwards_the_model_options(tmp_path: Path) -> None:
    from chaos.cli import main

    path = _write(tmp_path / "nil-read.edn", NIL_READ)
    r = CliRunner().invoke(main, ["check", str(path), "-m", "cas-register"])
    assert r.exit_code == 1, r.output
    r = CliRunner().invoke(
        main, ["check", str(path), "-m", "cas-register", "--semantics", "knossos"]
    )
    assert r.exit_code == 0 and "semantics: knossos" in r.output
    r = CliRunner().invoke(main, ["check", str(path), "-m", "cas-register", "--nil-read", "any"])
    assert r.exit_code == 0 and "knossos" not in r.output
    r = CliRunner().invoke(main, ["check", str(path), "-m", "cas-register", "--semantics", "elle"])
    assert r.exit_code == 3
    # a run folder is judged by its lab's checkers: the model options do not apply there
    r = CliRunner().invoke(main, ["check", str(tmp_path), "--semantics", "knossos"])
    assert r.exit_code == 3 and "only with --model" in r.output
