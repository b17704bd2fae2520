"""Every option checked before anything starts; exit statuses defined once and as documented.

The refusals run with ``DOCKER_HOST`` naming a socket that does not exist: a check that came after
the engine was asked would exit 4 ("no Docker engine answers"), not 3, so exit 3 with nothing in
the store proves the refusal came first. Most run in this process (CliRunner, through the same
``main`` and its exit statuses); one of each kind also as a real process.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.core.capabilities import Names, TxnPoints
from chaos.core.spec import TestSpec
from chaos.exits import MEANING, Exit, usage_status
from chaos.orchestrator import explore
from chaos.workloads import registry
from chaos.workloads.lab1.workload import Lab1
from chaos.workloads.lab3.workload import Lab3

REPO = Path(__file__).resolve().parents[2]
NO_ENGINE = "unix:///nonexistent/chaos-test/docker.sock"


def _chaos(*args: str, store: Path | None) -> tuple[int, list[str], float]:
    """A real `chaos` process with no engine: its status, its lines, its seconds."""
    env = {"DOCKER_HOST": NO_ENGINE, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    t0 = time.monotonic()
    where = ["--store", str(store)] if store is not None else []
    p = subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args, *where],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip
    lines = [x for x in (p.stdout + p.stderr).splitlines() if x.strip()]
    return p.returncode, lines, time.monotonic() - t0


def _invoke(*args: str, store: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    r = CliRunner().invoke(main, [*args, "--store", str(store)])
    return r.exit_code, [x for x in r.output.splitlines() if x.strip()]


# each case of issue 22's "Commands", and the word the one line must name
REFUSED = [
    (["run", "lab3", "--tasks", "-5"], "--tasks"),
    (["run", "lab3", "--tasks", "0"], "--tasks"),
    (["run", "lab3", "--rate", "-1"], "--rate"),
    (["run", "lab3", "--time-limit", "-3"], "--time-limit"),
    (["run", "lab3", "-o", "ack_wait=-1"], "lab3 option ack_wait=-1: expected a number > 0"),
    (["run", "lab3", "-o", "ack_wait=0"], "lab3 option ack_wait=0: expected a number > 0"),
    (["run", "lab3", "-o", "work_seconds=-1"], "work_seconds=-1: expected a number >= 0"),
    (["run", "jetstream-queue", "-o", "ack_wait=0"], "jetstream-queue option ack_wait=0"),
    (["run", "lab1", "-o", "ack_wait=1"], "lab1 has no option ack_wait"),
    (["run", "lab3", "--concurrency", "-2"], "--concurrency"),
    (["run", "lab3", "--pause-duration", "-2"], "--pause-duration"),
    (["run", "lab3", "--nemesis-interval", "0"], "--nemesis-interval"),
    (["run", "lab3", "--nemesis-jitter", "1.5"], "--nemesis-jitter"),
    (["explore", "lab3", "--budget", "-1"], "--budget"),
    (["run", "lab3", "--nemesis", "pause:wroker"], "did you mean 'worker'?"),
    (["run", "lab3", "--nemesis", "kill:worker@majorty"], "did you mean 'majority'?"),
    (["run", "lab3", "--nemesis", "partition:n7"], "no node n7"),
    (["run", "lab1", "--nemesis", "clock:skew:holdr"], "did you mean 'holder'?"),
    (["run", "lab3", "--nemesis", "packet-loss:30%:worker"], "takes nodes only"),
    (["run", "lab3", "--trigger", "pause worker on delivery until comit"], "'commit'?"),
    (["run", "lab3", "--trigger", "pause wroker on delivery"], "'worker on delivery'?"),
    (["run", "lab3", "--scenarios", "all", "--nemesis", "pause"], "--scenarios all"),
    (["explore", "lab3", "-o", "set_size=9"], "set_size"),
]


@pytest.mark.parametrize(("argv", "names"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_a_bad_option_exits_3_in_one_line_before_anything_starts(
    argv: list[str], names: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    code, lines = _invoke(*argv, store=store, monkeypatch=monkeypatch)
    assert code == Exit.USAGE, lines
    assert len(lines) == 1 and lines[0].startswith("chaos: ") and names in lines[0], lines
    assert not store.exists()  # no run folder, no `latest` link


@pytest.mark.parametrize(
    "argv",
    [["run", "lab3", "-o", "ack_wait=-1"], ["run", "lab3", "--nemesis", "pause:wroker"]],
    ids=["range", "target"],
)
def test_a_real_process_refuses_in_one_line_too(argv: list[str], tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, lines, seconds = _chaos(*argv, store=store)
    assert code == Exit.USAGE and len(lines) == 1 and lines[0].startswith("chaos: "), lines
    assert not store.exists()
    print(f"refused in {seconds:.2f} s (the interpreter's start included)")


def test_a_schedule_files_target_is_checked_and_named_by_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("- at 3s pause worker for 2s\n- at 6s pause wroker for 2s\n")
    code, lines = _invoke(
        "run", "lab3", "--schedule", str(plan), store=tmp_path / "s", monkeypatch=monkeypatch
    )
    assert code == Exit.USAGE and len(lines) == 1, lines
    assert f"{plan}:2: unknown role or node selector 'wroker' (did you mean 'worker'?)" in lines[0]
    assert not (tmp_path / "s").exists()


def test_serve_refuses_a_port_out_of_range_not_as_an_internal_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["serve", "--port", "99999", "--store", str(tmp_path)])
    assert r.exit_code == Exit.USAGE
    assert "99999 is not in the range 0<=x<=65535" in r.output
    assert "internal error" not in r.output


def test_the_same_options_are_run_when_valid_so_the_check_is_not_the_refusal(
    tmp_path: Path,
) -> None:
    """The control: with every value in range and the words right, the command gets past the
    checks and stops at the missing engine (exit 4: the documented environment status, which
    every ClickException once turned into 3), with no run folder."""
    store = tmp_path / "store"
    code, lines, _ = _chaos(
        "run", "lab3", "--tasks", "1", "--rate", "0.5", "--time-limit", "3", "-o", "ack_wait=1",
        "--concurrency", "1", "--pause-duration", "1", "--nemesis-interval", "0.5",
        "--nemesis", "pause:worker@n1+n2,kill:leader@majority,partition:halves",
        "--trigger", "pause worker on delivery until commit", store=store,
    )  # fmt: skip
    assert code == Exit.ENVIRONMENT, lines
    assert lines[-1].startswith("chaos: no Docker engine answers"), lines
    assert not store.exists()


def test_no_engine_is_exit_4_for_a_run_and_an_image_build(tmp_path: Path) -> None:
    code, lines, _ = _chaos("run", "lab1", "--seed", "1", store=tmp_path / "s")
    assert code == Exit.ENVIRONMENT and "no Docker engine answers" in lines[-1], lines
    assert not (tmp_path / "s").exists()
    code, lines, _ = _chaos("image", "build", store=None)
    assert code == Exit.ENVIRONMENT and lines == [lines[0]], lines
    assert lines[0].startswith("chaos: no Docker engine answers")


@pytest.mark.usefixtures("no_plots")
def test_a_page_that_cannot_be_written_is_exit_4_not_3(tmp_path: Path) -> None:
    from tests.fixtures import synthetic_runs as runs

    run_dir = runs.valid_lab3(tmp_path / "store")
    (run_dir / "report.html").mkdir()  # the page cannot replace a folder
    r = CliRunner().invoke(main, ["report", str(run_dir)])
    assert r.exit_code == Exit.ENVIRONMENT, r.output
    assert "cannot write the report" in r.output


def test_a_port_in_use_is_exit_4(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = CliRunner().invoke(main, ["serve", "--port", str(port), "--store", str(tmp_path)])
    assert r.exit_code == Exit.ENVIRONMENT, r.output
    assert f"cannot listen on 127.0.0.1:{port}" in r.output


# ------------------------------------------------------------------ exit statuses, defined once


def test_click_codes_become_usage_and_chaos_own_codes_are_kept() -> None:
    assert usage_status(1) is Exit.USAGE  # click.ClickException
    assert usage_status(2) is Exit.USAGE  # click.UsageError: 2 would read as "unknown"
    assert usage_status(Exit.ENVIRONMENT) is Exit.ENVIRONMENT
    assert usage_status(Exit.INTERNAL) is Exit.INTERNAL


def test_no_module_defines_an_exit_status_of_its_own() -> None:
    own = re.compile(r"^\s*EXIT_[A-Z_]+\s*=\s*\d+\s*$", re.M)  # not EXIT_WAIT = 5.0 s
    found = [
        str(p.relative_to(REPO))
        for p in (REPO / "chaos").rglob("*.py")
        if own.search(p.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize("doc", ["README.md", "docs/user-guide.md"])
def test_the_documented_exit_table_is_the_one_in_chaos_exits(doc: str) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", text, re.M)
    table = {int(code): meaning for code, meaning in rows if int(code) in set(Exit)}
    assert table == {int(e): MEANING[e] for e in Exit}


# ------------------------------------------------------------------ chaos grade writes nothing


def test_grade_of_a_missing_folder_writes_nothing_and_the_corrected_command_is_not_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chaos.grade.start import GradeArgs, request_of

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["grade", "nope", "--workload", "lab3"])
    assert r.exit_code == Exit.USAGE
    assert "nope: not a folder of submissions" in r.output
    assert not (tmp_path / "grades").exists()
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "subs" / "alice" / "protocol.py").write_text("x = 1\n")
    req = request_of(GradeArgs(submissions=Path("subs"), lab="lab3"), lambda _: None)
    assert req.out.parent == Path("grades")  # not "holds a grade already"


def test_grade_checks_each_configuration_as_chaos_run_would_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "subs" / "alice" / "protocol.py").write_text("x = 1\n")
    plan = tmp_path / "grade.yaml"
    plan.write_text("configs:\n  - name: fast\n    run:\n      tasks: 0\n      nemesis: pause\n")
    r = CliRunner().invoke(main, ["grade", "subs", "--workload", "lab3", "--matrix", str(plan)])
    assert r.exit_code == Exit.USAGE
    assert f"{plan}: configuration fast: Invalid value for '--tasks': 0" in r.output
    assert not (tmp_path / "grades").exists()


def test_grade_checks_each_configurations_targets_and_triggers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    plan = tmp_path / "grade.yaml"
    for run, said in [
        ("nemesis: pause:wroker", "did you mean 'worker'?"),
        ("trigger: ['pause worker on delivery until comit']", "did you mean 'commit'?"),
    ]:
        plan.write_text(f"configs:\n  - name: c\n    run:\n      {run}\n")
        r = CliRunner().invoke(main, ["grade", "subs", "--workload", "lab3", "--matrix", str(plan)])
        assert r.exit_code == Exit.USAGE and f"{plan}: configuration c: " in r.output
        assert said in r.output
    assert not (tmp_path / "grades").exists()


@pytest.mark.parametrize("lab", ["lab1", "lab3"])
def test_the_shipped_grade_matrices_pass_chaos_runs_check(lab: str, tmp_path: Path) -> None:
    from chaos.cli.run import check_run_argv as _check_run_argv
    from chaos.grade.start import GradeArgs, request_of

    (tmp_path / "alice").mkdir()
    args = GradeArgs(submissions=tmp_path, lab=lab, out=tmp_path / "o", check_run=_check_run_argv)
    assert request_of(args, lambda _: None).matrix.configs


def test_grade_refuses_a_run_timeout_out_of_range(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["grade", str(tmp_path), "--workload", "lab3", "--run-timeout", "0"]
    )
    assert r.exit_code == Exit.USAGE and "--run-timeout" in r.output


# ------------------------------------------------------------------ explore's stored commands


def _spec_of_command(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestSpec:
    """What `chaos run` would run for ``command``: its spec, caught before anything starts."""
    import chaos.orchestrator.plan as orchestrator  # where `chaos run` calls it

    got: list[TestSpec] = []

    def caught(spec: TestSpec, *_: Any) -> None:
        got.append(spec)
        raise SystemExit(0)

    monkeypatch.setattr(orchestrator, "check_spec", caught)
    argv = shlex.split(command)
    assert argv[:2] == ["chaos", "run"], argv
    r = CliRunner().invoke(main, [*argv[1:], "--store", str(tmp_path)])
    assert r.exit_code == 0 and got, r.output
    return got[0]


@pytest.mark.parametrize("wl", [Lab3(), Lab1()], ids=["lab3", "lab1"])
def test_each_explore_run_stores_the_chaos_run_that_reproduces_it(
    wl: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a workload option given (AckWait where the workload declares it): the commands keep it
    given = {"ack_wait": "3"} if "ack_wait" in {o.name for o in wl.options} else {}
    base = TestSpec(workload=wl.name, seed=11, time_limit=20.0, options=given)
    txns = {fn: 2 for fn in wl.txn_functions}
    one = dict(wl.one_task) if isinstance(wl, TxnPoints) else {}
    probes = explore.probes(wl, txns, brief=1.8)
    assert len(probes) > 10
    for probe in probes:
        spec = probe.apply(base, explore.probe_seed(base.seed, probe.label), one)
        command = explore.run_command(spec)
        assert f"--seed {spec.seed}" in command and "explore" not in command
        assert _spec_of_command(command, tmp_path, monkeypatch) == spec, command


def test_each_scenario_run_stores_the_chaos_run_that_makes_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chaos.orchestrator.plan as orchestrator  # where `chaos run` calls it

    made: list[tuple[TestSpec, str]] = []

    def recorded(spec: TestSpec, *, command: str, **_: Any) -> None:
        made.append((spec, command))
        if len(made) == len(Lab3.scenarios):
            raise SystemExit(0)

    monkeypatch.setattr(orchestrator, "run_test", recorded)
    argv = ["run", "lab3", "--scenarios", "all", "--seed", "9", "--ack-wait", "3"]
    r = CliRunner().invoke(main, [*argv, "--store", str(tmp_path), "--no-html"])
    assert r.exit_code == 0, r.output
    assert [s.scenario for s, _ in made] == list(Lab3.scenarios)
    for spec, command in made:
        assert "--scenarios" not in command and f"--nemesis {spec.scenario}" in command
        assert f"--store {tmp_path}" in command
        again = _spec_of_command(command, tmp_path, monkeypatch)
        assert again == dataclasses.replace(spec, scenario=None), command


def test_run_argv_leaves_out_exactly_the_defaults_of_chaos_run() -> None:
    """TestSpec's defaults are `chaos run`'s: else a stored command would not reproduce."""
    from chaos.core.spec import SPEC_OPTIONS

    options = {p.opts[0]: p.default for p in main.commands["run"].params if p.opts}
    defaults = {f.name: f.default for f in dataclasses.fields(TestSpec)}
    assert SPEC_OPTIONS, "TestSpec declares its run parameters"
    for option in SPEC_OPTIONS:
        default = options[option.flag]
        assert str(default) in (str(defaults[option.name]), f"{defaults[option.name]}.0")


def test_explore_cuts_a_long_sentence_at_a_word_and_names_each_page(tmp_path: Path) -> None:
    from chaos.checkers.verdict import Verdict

    said = "double-apply: " + " ".join(f"task t{i} applied twice by n2" for i in range(40))
    run_dir = tmp_path / "lab3" / "20261201T000000-abcdef"
    found = explore.Exploration(trace_run=tmp_path / "trace", txns={"complete": 2}, probes=[])
    probe = explore.Probe(label="kill worker after txn 1 of complete", trigger="x")
    found.tried.append(
        explore.Tried(
            probe=probe, run_dir=run_dir, verdict=Verdict.INVALID, reached=True, said=said
        )
    )
    lines = explore.summary_lines(found)
    sentence = next(x.strip() for x in lines if x.strip().startswith("double-apply"))
    assert sentence.endswith("…") and len(sentence) <= explore.SAID_CHARS
    assert said.startswith(sentence[:-1]) and said[len(sentence) - 1] == " "  # a whole word
    assert f"report: {run_dir / 'report.html'}" in [x.strip() for x in lines]


# ------------------------------------------------------------------ the workloads' words


@pytest.mark.parametrize("name", sorted(registry.BUILTIN))
def test_each_workload_names_the_roles_and_events_its_capabilities_use(name: str) -> None:
    wl = registry.get(name)
    assert isinstance(wl, Names)
    roles, kinds = set(wl.roles), set(wl.event_kinds)
    for role, _moment, _kind in getattr(wl, "hold_points", {}):
        assert role in roles
    if isinstance(wl, TxnPoints):
        assert set(wl.txn_functions.values()) | set(wl.txn_roles) <= roles
        assert wl.rival in kinds


# ------------------------------------------------------------------ chaos ls


def test_ls_shows_the_trigger_of_a_trigger_driven_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "lab3" / "20261201T000000-abcdef"
    run_dir.mkdir(parents=True)
    spec = {
        "workload": "lab3",
        "solution": "reference",
        "nemesis": [],
        "triggers": ["kill worker after txn 1 of complete"],
        "seed": 5,
        "verdict": "valid",
    }
    (run_dir / "spec.json").write_text(json.dumps(spec))
    r = CliRunner().invoke(main, ["ls", "--store", str(tmp_path)])
    assert r.exit_code == 0
    assert "trigger 'kill worker after txn 1 of complete'" in r.output


@pytest.mark.parametrize(
    ("workload", "options", "seconds"),
    [("lab3", ["-o", "ack_wait=4"], 7.0), ("lab3", [], 5.0), ("lab1", [], 5.0)],
)
def test_a_schedule_step_without_a_duration_outlasts_the_workloads_takeover(
    workload: str,
    options: list[str],
    seconds: float,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default fault of `chaos run` is the workload's takeover wait (lab3's AckWait, from its
    -o option) + 3 s; a workload without one gets 2 + 3, as every run did before."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("- at 3s kill n1\n")
    command = shlex.join(["chaos", "run", workload, "--schedule", str(plan), *options])
    spec = _spec_of_command(command, tmp_path, monkeypatch)
    assert spec.schedule is not None
    assert [s["duration"] for s in spec.schedule["steps"]] == [seconds]
