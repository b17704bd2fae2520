"""What `chaos run`, `chaos explore` and `chaos check` decide, called as plain functions (no
click): the click layer only parses into these requests and prints what comes back.

No Docker engine is asked: ``DOCKER_HOST`` names a socket that does not exist, so a plan that
asked the engine would fail here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers.history_file import ModelCheck, Refused, check_model
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.cli import run as cli_run
from chaos.cluster.docker.backend import DockerBackend
from chaos.exits import Exit
from chaos.histories.store import StoredRun, load_run
from chaos.orchestrator import plan
from chaos.orchestrator.explore import Exploration, Probe, Tried, run_command, summary_lines
from chaos.orchestrator.recheck import recheck
from chaos.orchestrator.run import RunOutcome
from chaos.workloads.lab3.workload import Lab3
from tests.fixtures.hostile_inputs import RUNS, write_run

NO_ENGINE = "unix:///nonexistent/chaos-test/docker.sock"


@pytest.fixture(autouse=True)
def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)


def _request(argv: list[str], store: Path) -> plan.RunRequest:
    """The request `chaos run ARGV` makes (click supplies the defaults; nothing runs)."""
    p = dict(cli_run.run.make_context("run", [*argv, "--store", str(store)]).params)
    del p["quiet"], p["nodes_arg"]
    nodes = (
        cli_run.run.make_context("run", list(argv)).params["nodes_arg"]
        if "--nodes" in argv
        else None
    )
    return plan.RunRequest.of(p, nodes=nodes, argv=("run", *argv))


def test_the_requests_hold_exactly_the_options_the_commands_hand_them(tmp_path: Path) -> None:
    """A `chaos run` or `chaos explore` option added without its field (or a field no option
    fills) fails here, not as an internal error on the first run: the declared run options go
    into ``settings`` and ``backend_options``, every other parameter into a field of its own."""
    from chaos.core import run_options

    run_params = {p.name for p in cli_run.run.params if p.expose_value}
    declared = {o.name for o in run_options.spec_options("run")} - {"nodes"}
    backend = {o.name for o in run_options.backend_options("run")}
    run_fields = {f.name for f in dataclasses.fields(plan.RunRequest)}
    own = {"settings", "backend_options", "nodes", "argv"}
    # the click layer's own: the deprecated --nodes FILE spelling, progress lines; argv is sys.argv
    assert run_params - {"nodes_arg", "quiet"} - declared - backend == run_fields - own
    request = _request(["lab3"], tmp_path)
    assert set(request.settings) == declared and set(request.backend_options) == backend
    explore_params = {p.name for p in cli_run.explore.params if p.expose_value}
    declared = {o.name for o in run_options.spec_options("explore")} - {"nodes"}
    explore_fields = {f.name for f in dataclasses.fields(plan.ExploreRequest)}
    command = {"budget", "try_all", "json_path", "quiet"}
    assert explore_params - command - declared - backend == explore_fields - own | {"nodes"}
    with pytest.raises(TypeError):  # a parameter of its own the command forgot to take out
        plan.RunRequest.of({"workload": "lab3", "quiet": True})


def test_scenarios_plan_one_checked_spec_per_scenario_each_stored_as_its_own_run(
    tmp_path: Path,
) -> None:
    argv = ["lab3", "--scenarios", "all", "--seed", "9", "-o", "ack_wait=3"]
    got = plan.plan_runs(_request(argv, tmp_path))
    assert isinstance(got.backend, DockerBackend) and got.seed == 9
    assert [s.scenario for s in got.specs] == list(Lab3.scenarios)
    assert [s.nemesis for s in got.specs] == [(n,) for n in Lab3.scenarios]
    assert {(s.seed, s.options["ack_wait"], s.nodes) for s in got.specs} == {(9, "3", 3)}
    assert got.command == "chaos run lab3 --scenarios all --seed 9 -o ack_wait=3"
    for spec in got.specs:
        alone = got.command_of(spec)
        assert alone == run_command(spec, ("--store", str(tmp_path)))
        assert f"--nemesis {spec.scenario}" in alone and "--scenarios" not in alone


def test_one_run_stores_the_command_as_typed_with_the_seed_it_drew(tmp_path: Path) -> None:
    got = plan.plan_runs(_request(["lab3", "--nemesis", "pause,kill:broker"], tmp_path))
    (spec,) = got.specs
    assert spec.nemesis == ("pause", "kill:broker") and spec.scenario is None
    assert got.command == f"chaos run lab3 --nemesis pause,kill:broker --seed {got.seed}"
    assert got.command_of(spec) == got.command and got.seed >= 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["nosuch"], "unknown workload 'nosuch'"),
        (["lab3", "--backend", "nosuch"], "unknown backend 'nosuch'"),
        (["lab3", "-o", "x"], "--option 'x': expected KEY=VALUE"),
        (["lab3", "--nemesis", "nosuch"], "unknown nemesis 'nosuch'"),
        (["lab3", "--scenarios", "all", "--nemesis", "pause"], "--nemesis pause with --scenarios"),
        (["etcd-register", "--scenarios", "all"], "etcd-register has no seed scenarios"),
        (["lab3", "--trigger", "nonsense"], "trigger 'nonsense'"),
    ],
)
def test_a_request_that_cannot_work_is_a_value_error_naming_why(
    argv: list[str], says: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        plan.plan_runs(_request(argv, tmp_path))
    assert not any(tmp_path.iterdir()), "a refused request created nothing"


NODES = """\
known_hosts: kh
key: id_test
user: chaos
nodes:
  - host: 10.0.0.1
  - host: 10.0.0.2
"""


def test_a_nodes_file_sets_the_count_and_a_count_beside_it_must_agree(tmp_path: Path) -> None:
    (tmp_path / "id_test").write_text("not really a key")
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    given = {"nodes_file": nodes}
    assert plan.backend_for("ssh", None, given)[1] == 2
    assert plan.backend_for("ssh", 2, given)[1] == 2
    with pytest.raises(ValueError, match=r"--nodes 3: .*nodes.yaml names 2 node\(s\)"):
        plan.backend_for("ssh", 3, given)
    assert plan.backend_for("docker", None, {})[1] == plan.DEFAULT_NODES == 3
    assert plan.backend_for("docker", 5, {"nodes_file": None})[1] == 5


def _result(verdict: Verdict) -> CheckResult:
    return CheckResult(checker="c", verdict=verdict, summary="s")


def _outcome(*verdicts: Verdict, interrupted: bool = False) -> RunOutcome:
    results = [_result(v) for v in verdicts]
    return RunOutcome(
        run_dir=Path("r"), verdict=verdicts[0], results=results, interrupted=interrupted
    )


def test_the_run_status_is_all_results_together_unless_a_run_was_interrupted() -> None:
    assert plan.run_status([_outcome(Verdict.VALID), _outcome(Verdict.VALID)]) is Exit.VALID
    assert plan.run_status([_outcome(Verdict.VALID), _outcome(Verdict.INVALID)]) is Exit.INVALID
    assert plan.run_status([_outcome(Verdict.UNKNOWN, Verdict.VALID)]) is Exit.UNKNOWN
    stopped = _outcome(Verdict.VALID, interrupted=True)
    assert plan.run_status([_outcome(Verdict.INVALID), stopped]) is Exit.INTERRUPTED


class _Scenarios:
    name = "fake"
    scenarios = ("a", "b")

    def lab_report(self, run: StoredRun, results: list[CheckResult]) -> dict[str, Any]:
        return {}

    def combined_report(self, reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {"joined": sorted(reports), "runs": [r["run"] for r in reports.values()]}


def test_the_lab_report_joins_several_runs_and_is_written_where_asked(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        d = tmp_path / "store" / "fake" / name
        d.mkdir(parents=True)
        (d / "lab-report.json").write_text(json.dumps({"scenario": name}))
        runs.append(dataclasses.replace(_outcome(Verdict.VALID), run_dir=d))
    request = _request(["lab3"], tmp_path / "store")
    request = dataclasses.replace(request, workload="fake")
    made = plan.RunPlan(request, _Scenarios(), DockerBackend(), [], 1, "")  # type: ignore[arg-type]
    assert plan.write_lab_report(made, runs[:1]) is None, "one run, no --lab-report-out: none"
    out = plan.write_lab_report(made, runs)
    assert out == tmp_path / "store" / "fake" / "lab-report.json"
    assert json.loads(out.read_text()) == {
        "joined": ["a", "b"],
        "runs": [str(r.run_dir) for r in runs],
    }
    asked = dataclasses.replace(
        made, request=dataclasses.replace(request, report_path=tmp_path / "x.json")
    )
    assert plan.write_lab_report(asked, runs[:1]) == tmp_path / "x.json"
    assert json.loads((tmp_path / "x.json").read_text())["joined"] == ["a"]


def _tried(verdict: Verdict, reached: bool = True) -> Tried:
    return Tried(
        probe=Probe(label="p"), run_dir=Path("r"), verdict=verdict, reached=reached, said=""
    )


@pytest.mark.parametrize(
    ("trace", "tried", "status"),
    [
        (Verdict.VALID, [_tried(Verdict.VALID)], Exit.VALID),
        (Verdict.VALID, [], Exit.VALID),
        (
            Verdict.VALID,
            [_tried(Verdict.VALID), _tried(Verdict.VALID, reached=False)],
            Exit.UNKNOWN,
        ),
        (Verdict.VALID, [_tried(Verdict.UNKNOWN)], Exit.UNKNOWN),
        (
            Verdict.VALID,
            [_tried(Verdict.UNKNOWN), _tried(Verdict.INVALID, reached=False)],
            Exit.INVALID,
        ),
        (Verdict.INVALID, [], Exit.INVALID),
    ],
)
def test_the_explore_status(trace: Verdict, tried: list[Tried], status: Exit) -> None:
    found = Exploration(trace_run=Path("t"), txns={}, probes=[], tried=tried, trace_verdict=trace)
    assert found.exit_status() is status


def test_an_explore_out_of_budget_is_unknown_and_names_the_points_left() -> None:
    """3 of 36 points tried, all valid, proves nothing about the other 33: exit 2, not 0."""
    points = [Probe(label=f"kill worker before txn {i} of complete") for i in range(36)]
    tried = [
        Tried(probe=p, run_dir=Path(f"r{i}"), verdict=Verdict.VALID, reached=True, said="")
        for i, p in enumerate(points[:3])
    ]
    found = Exploration(trace_run=Path("t"), txns={}, probes=points, tried=tried)
    assert found.exit_status() is Exit.UNKNOWN
    assert [p.label for p in found.left()] == [p.label for p in points[3:]]
    lines = summary_lines(found)
    assert "coverage: 3 of 3 tried point(s) reached; 36 point(s) in all, 33 not tried" in lines
    assert "not tried, the budget ended (--budget 36 tries every point):" in lines
    assert "  kill worker before txn 35 of complete" in lines
    assert [x.strip() for x in lines].count("report: r1/report.html") == 1
    found.tried = [
        Tried(probe=p, run_dir=Path("r"), verdict=Verdict.VALID, reached=True, said="")
        for p in points
    ]
    assert found.exit_status() is Exit.VALID and found.left() == []


def test_recheck_refuses_a_run_without_a_known_workload_naming_the_path_given(
    tmp_path: Path,
) -> None:
    def stored(spec: dict[str, Any]) -> StoredRun:
        return StoredRun(tmp_path, spec, [], [], {}, [], [])

    with pytest.raises(ValueError, match=r"^here/spec.json names no workload"):
        recheck(stored({}), Path("here"))
    with pytest.raises(ValueError, match=r"^here/spec.json: field 'workload': unknown workload"):
        recheck(stored({"workload": "nosuch"}), Path("here"))
    assert not (tmp_path / "results.json").exists()


def test_recheck_writes_the_results_it_returns(tmp_path: Path) -> None:
    case = next(c for c in RUNS if c.name == "no-final")
    run = load_run(write_run(tmp_path, case))
    results, verdict = recheck(run, run.path)
    stored = json.loads((run.path / "results.json").read_text())
    assert stored["verdict"] == verdict.value and verdict is not Verdict.VALID
    assert any(case.says in r.summary for r in results)
    assert [r["checker"] for r in stored["results"]] == [r.checker for r in results]
    assert results[-1].checker == "complete-record", "completeness, which no workload leaves out"


HISTORY = (
    "{:type :invoke, :f :write, :value 1, :time 1, :process 0, :index 0}\n"
    "{:type :ok, :f :write, :value 1, :time 2, :process 0, :index 1}\n"
    "{:type :invoke, :f :read, :value nil, :time 3, :process 1, :index 2}\n"
    "{:type :ok, :f :read, :value 2, :time 4, :process 1, :index 3}\n"
)


def test_a_history_check_returns_its_answer_and_never_exits(tmp_path: Path) -> None:
    """`chaos check FILE --model M` prints what this function returns; bad input is an
    exception the command line maps to its status, not an exit of the checker's own."""
    path = tmp_path / "h.edn"
    path.write_text(HISTORY)
    answer = check_model(path, ModelCheck(model="register"))
    assert answer.verdict is Verdict.INVALID  # read 2, never written
    assert answer.verdict.exit_code == Exit.INVALID and answer.deciding
    with pytest.raises(Refused, match="--consistency applies to list-append and rw-register"):
        check_model(path, ModelCheck(model="register", consistency="serializable"))


def test_check_faults_refuses_a_fault_the_workload_does_not_have() -> None:
    kwargs: dict[str, Any] = dict(triggers=(), nodes=3, schedule_file=None)
    plan.check_faults("lab3", nemesis="pause,kill:broker", **kwargs)
    with pytest.raises(ValueError, match="unknown nemesis 'nosuch'"):
        plan.check_faults("lab3", nemesis="pause,nosuch", **kwargs)
    with pytest.raises(ValueError, match="unknown workload"):
        plan.check_faults("nosuch", nemesis="", **kwargs)
