"""``chaos check FILE --model M`` on the EDN shapes real Jepsen and Knossos histories have, on
malformed histories (refused, or checked leniently and never judged invalid), on histories that
look keyed (never split unless asked), and the linear pre-pass that decides cheap register
histories before the search (always right: a property test holds it to the search)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.checkers import models
from chaos.checkers.linearizable import check_linearizable, check_partitions, prepare
from chaos.checkers.register_precheck import precheck_register
from chaos.checkers.verdict import Verdict
from chaos.cli.model_check import check_file_command
from chaos.histories.ops import Op, OpType
from tests.fuzz import examples

ROOT = Path(__file__).resolve().parents[2]


def line(i: int, typ: str, f: str, value: str, process: int) -> str:
    return f"{{:type :{typ}, :f :{f}, :value {value}, :process {process}, :time {i}, :index {i}}}"


# A valid cas-register history: write 1, read 1, cas 1->2, read 2.
OPS = [
    line(0, "invoke", "write", "1", 0),
    line(1, "ok", "write", "1", 0),
    line(2, "invoke", "read", "nil", 1),
    line(3, "ok", "read", "1", 1),
    line(4, "invoke", "cas", "[1 2]", 0),
    line(5, "ok", "cas", "[1 2]", 0),
    line(6, "invoke", "read", "nil", 1),
    line(7, "ok", "read", "2", 1),
]
# The same with the last read stale: 1 after the cas to 2 completed.
STALE = [*OPS[:-1], line(7, "ok", "read", "1", 1)]


def shapes(ops: list[str]) -> dict[str, str]:
    pretty = [o.replace(", :", ",\n  :") for o in ops]
    return {
        # the three shapes under "Why" in issue 23
        "comment-before-vector": ";; Jepsen history\n; of a cas register\n["
        + "\n ".join(ops)
        + "]\n",
        "list": "(" + "\n".join(ops) + ")\n",
        "multi-line-maps": "[" + "\n ".join(pretty) + "]\n",
        # and some maps spread over lines, others not, with comments and a discard
        "mixed": "; head\n"
        + "\n".join(p if i % 3 else o for i, (o, p) in enumerate(zip(ops, pretty, strict=True)))
        + "\n#_ {:type :ok, :f :read, :value 99, :process 1}\n; end\n",
    }


def chaos_check(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command, in a child process: ``python3 -m chaos.cli check PATH ...``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", "check", str(path), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize("shape", list(shapes(OPS)))
def test_the_shapes_real_histories_have_are_judged_valid(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "history.edn"
    path.write_text(shapes(OPS)[shape])
    r = chaos_check(path, "--model", "cas-register")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verdict: valid" in r.stdout and "4 ops over 1 key(s)" in r.stdout
    assert r.stderr == ""
    # ... and each shape can fail: the stale read is found in it
    path.write_text(shapes(STALE)[shape])
    r = chaos_check(path, "--model", "cas-register")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "read() -> 1 (op 6, process 1)" in r.stdout


def _run(*args: str) -> Any:
    return CliRunner().invoke(check_file_command, list(args))


# ---------------------------------------------------------------- malformed histories


def test_an_orphan_completion_is_a_malformed_history(tmp_path: Path) -> None:
    orphan = line(9, "ok", "write", "7", 5)  # process 5 never invoked anything
    path = tmp_path / "h.edn"
    path.write_text("\n".join([*OPS[:4], orphan, *OPS[4:]]) + "\n")
    r = _run(str(path), "--model", "cas-register")
    assert r.exit_code == 3
    assert f"{path}:5: malformed history: a :ok completion (index 9) of process 5" in r.stderr
    assert "--lenient" in r.stderr
    # --lenient: a warning, and the verdict at best unknown (the lost invoke could matter)
    r = _run(str(path), "--model", "cas-register", "--lenient", "--json")
    assert r.exit_code == 2, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "unknown" and doc["problems"][0]["line"] == 5


def test_an_unreadable_form_is_an_error_naming_its_line_and_lost_ops_never_invalid(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.edn"
    broken = OPS[6].replace(":value nil", ":value 08")  # 08 is not an EDN number
    path.write_text("\n".join([*STALE[:6], broken, STALE[7]]) + "\n")
    r = _run(str(path), "--model", "cas-register")
    assert r.exit_code == 3 and f"{path}:7: bad line: not EDN (invalid number '08'" in r.stderr
    # --lenient: the stale read lost its invoke (an orphan now, also reported) and what is
    # left would be invalid or valid depending on what was lost: unknown, never invalid
    r = _run(str(path), "--model", "cas-register", "--lenient")
    assert r.exit_code == 2 and "verdict: unknown" in r.stdout
    # a cut-off last line (the writer died) is only a warning: it can only be the last event
    path.write_text("\n".join(OPS) + "\n" + OPS[0][:30])
    r = _run(str(path), "--model", "cas-register")
    assert r.exit_code == 0 and "truncated last line" in r.stderr


# ---------------------------------------------------------------- keys only when asked

KEYED = [
    line(0, "invoke", "write", "[1 5]", 0),
    line(1, "ok", "write", "[1 5]", 0),
    line(2, "invoke", "read", "[2 nil]", 1),
    line(3, "ok", "read", "[2 nil]", 1),
    line(4, "invoke", "read", "[1 nil]", 1),
    line(5, "ok", "read", "[1 5]", 1),
]


def test_a_keyed_looking_history_is_not_split_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "keyed.edn"
    path.write_text("\n".join(KEYED) + "\n")
    r = _run(str(path), "--model", "cas-register", "--json")
    doc = json.loads(r.stdout)
    lin = doc["results"][0]
    # one register of pair values: [2 nil] was never written to it
    assert r.exit_code == 1 and lin["stats"]["keys"] == 1 and lin["stats"]["independent"] is False
    assert "--independent" in doc["notes"][0] and "note: " in r.stderr
    r = _run(str(path), "--model", "cas-register", "--independent")
    assert r.exit_code == 0 and "over 2 key(s)" in r.stdout and "note:" not in r.stderr
    r = _run(str(path), "--model", "cas-register", "--no-independent")
    assert r.exit_code == 1 and "note:" not in r.stderr
    # the kv model's own key syntax (a :key field) needs no asking
    kv = [
        '{:type :invoke, :f :put, :key "x", :value "a", :process 0}',
        '{:type :ok, :f :put, :key "x", :value "a", :process 0}',
        '{:type :invoke, :f :get, :key "y", :value nil, :process 1}',
        '{:type :ok, :f :get, :key "y", :value "", :process 1}',
    ]
    path.write_text("\n".join(kv) + "\n")
    r = _run(str(path), "--model", "kv")
    assert r.exit_code == 0 and "over 2 key(s)" in r.stdout


# ---------------------------------------------------------------- the pre-pass


def h(*events: tuple[Any, ...]) -> list[Op]:
    return [
        Op(index=i, time=i / 10, process=p, type=OpType(t), f=f, value=v)
        for i, (p, t, f, v) in enumerate(events)
    ]


def _hard(n: int, last_read: int) -> list[Op]:
    """n concurrent indeterminate writes, reads of each in turn, then one more read: the
    search has to look at exponentially many subsets before it can say no."""
    events: list[tuple[Any, ...]] = [(p, "invoke", "write", p) for p in range(n)]
    events += [(p, "info", "write", p) for p in range(n)]
    for i in range(n):
        events += [(100 + i, "invoke", "read", None), (100 + i, "ok", "read", i)]
    events += [(999, "invoke", "read", None), (999, "ok", "read", last_read)]
    return h(*events)


def test_a_read_of_a_value_never_written_is_invalid_at_once() -> None:
    history = _hard(18, last_read=-1)
    r = check_linearizable(history, "register", time_limit=60)
    assert r.verdict is Verdict.INVALID and r.stats["decided_by"] == "pre-pass"
    assert "read() -> -1 (op 72, process 999) observed -1, which no write" in r.summary
    assert r.anomalies[0]["reason"] == "never-written"
    # the search without the pre-pass does not decide it in a second
    parts, _ = prepare(history, models.register())
    assert check_partitions(parts, models.register(), time_limit=1.0).verdict is Verdict.UNKNOWN


def test_the_command_decides_a_never_written_read_before_the_search(tmp_path: Path) -> None:
    from chaos.histories import edn

    path = tmp_path / "never.edn"
    edn.write_history(path, _hard(18, last_read=-1))
    t0 = time.perf_counter()
    r = _run(str(path), "--model", "register", "--search-timeout", "60")
    assert r.exit_code == 1 and "(decided before the search)" in r.stdout
    assert time.perf_counter() - t0 < 10  # not the 60 s limit


def test_the_pre_pass_cases_and_what_it_must_not_decide() -> None:
    cas = models.cas_register()
    # a read of 2 that returned before the only write of 2 was invoked
    early = h(
        (0, "invoke", "read", None),
        (0, "ok", "read", 2),
        (1, "invoke", "write", 2),
        (1, "ok", "write", 2),
    )
    r = check_linearizable(early, cas)
    assert r.stats.get("decided_by") == "pre-pass"
    assert r.anomalies[0]["reason"] == "read-before-write" and "op 0" in r.summary
    # concurrent with the write: possible, left to the search (valid)
    overlap = h(
        (0, "invoke", "read", None),
        (1, "invoke", "write", 2),
        (0, "ok", "read", 2),
        (1, "ok", "write", 2),
    )
    assert check_linearizable(overlap, cas).verdict is Verdict.VALID
    # an info write may have happened: a later read of its value is fine
    info = h((1, "invoke", "write", 2), (1, "info", "write", 2), (0, "invoke", "read", None))
    info.append(Op(index=3, time=0.3, process=0, type=OpType.OK, f="read", value=2))
    assert check_linearizable(info, cas).verdict is Verdict.VALID
    # a cas known to have failed its compare did not write its new value
    failed_cas = h(
        (0, "invoke", "cas", [1, 5]),
        (0, "fail", "cas", [1, 5]),
        (1, "invoke", "read", None),
        (1, "ok", "read", 5),
    )
    r = check_linearizable(failed_cas, cas)
    assert r.verdict is Verdict.INVALID and r.stats.get("decided_by") == "pre-pass"
    # ... an indeterminate cas may have
    maybe_cas = h(
        (9, "invoke", "write", 1),
        (9, "ok", "write", 1),
        (0, "invoke", "cas", [1, 5]),
        (0, "info", "cas", [1, 5]),
        (1, "invoke", "read", None),
        (1, "ok", "read", 5),
    )
    assert check_linearizable(maybe_cas, cas).verdict is Verdict.VALID
    # a cas that succeeded comparing against a value never written
    bad_compare = h((0, "invoke", "cas", [7, 8]), (0, "ok", "cas", [7, 8]))
    r = check_linearizable(bad_compare, cas)
    assert r.stats.get("decided_by") == "pre-pass" and "cas(7, 8)" in r.summary
    # the initial value was never written and reads of it are fine
    init = models.cas_register(init=0)
    assert check_linearizable(
        h((0, "invoke", "read", None), (0, "ok", "read", 0)), init
    ).verdict is (Verdict.VALID)


@st.composite
def register_histories(draw: st.DrawFn) -> list[Op]:
    """Small random register histories, valid and not: 3 processes, values 0..3."""
    events: list[tuple[Any, ...]] = []
    pending: dict[int, tuple[str, Any]] = {}
    for _ in range(draw(st.integers(1, 14))):
        p = draw(st.integers(0, 2))
        if p in pending:
            f, v = pending.pop(p)
            typ = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
            if f == "read":
                v = draw(st.none() | st.integers(0, 3)) if typ == "ok" else None
            events.append((p, typ, f, v))
        else:
            f = draw(st.sampled_from(["read", "write", "cas"]))
            v = {
                "read": None,
                "write": draw(st.integers(0, 3)),
                "cas": [draw(st.integers(0, 3)), draw(st.integers(0, 3))],
            }[f]
            pending[p] = (f, v)
            events.append((p, "invoke", f, v))
    return h(*events)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(register_histories(), st.sampled_from(["porcupine", "knossos"]))
def test_the_pre_pass_never_calls_invalid_what_the_search_calls_valid(
    history: list[Op], preset: str
) -> None:
    from chaos.checkers.semantics import build_model, semantics

    model = build_model("cas-register", semantics(preset))
    parts, _ = prepare(history, model)
    searched = check_partitions(parts, model, time_limit=None, max_states=None).verdict
    for part in parts:
        if precheck_register(part.inputs, part.outputs, part.events, model) is not None:
            assert searched is Verdict.INVALID
    # and the whole check agrees with the search alone
    whole = check_linearizable(history, model, time_limit=None, empty=Verdict.VALID)
    assert whole.verdict is searched


@pytest.mark.parametrize(
    "written,read,same",
    [
        ("sym", '"sym"', False),
        ("\\a", '"a"', False),
        ("1M", "1", False),
        ("1.5M", "1.5", False),
        ("(1 2)", "[1 2]", True),  # (= '(1 2) [1 2]) in Clojure
        ("1N", "1", True),
        ("sym", "sym", True),
        ("\\a", "\\a", True),
        ("1/2", "2/4", True),
    ],
)
def test_values_read_from_edn_compare_as_clojure_compares_them(
    written: str, read: str, same: bool
) -> None:
    from chaos.histories import edn

    text = "\n".join(
        [
            line(0, "invoke", "write", written, 0),
            line(1, "ok", "write", written, 0),
            line(2, "invoke", "read", "nil", 1),
            line(3, "ok", "read", read, 1),
        ]
    )
    ops, problems = edn.read_history_text(text + "\n")
    assert problems == []
    r = check_linearizable(ops, "register")
    assert r.verdict is (Verdict.VALID if same else Verdict.INVALID), r.summary
