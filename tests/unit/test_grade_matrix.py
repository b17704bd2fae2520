"""grade.yaml: what parses, and errors that name the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from chaos.cli.deprecation import OldName
from chaos.core.capabilities import Gradable, options_of
from chaos.grade import matrix
from chaos.grade.matrix import MatrixError, parse
from chaos.workloads import registry

GOOD = """\
defaults:
  time-limit: 20
  option: {lock_at_least: 2}
configs:
  - name: pause
    weight: 2
    run:
      nemesis: pause
  - name: on-delivery
    run:
      trigger: ["pause worker on delivery", "kill relay before publish"]
      time_limit: 10
      schedule: plans/s.yaml
  - name: quiet
  - name: more
    run: {option: {cron: 10, lock_at_least: 3}}
"""


def test_a_matrix_parses_with_defaults_and_weights(tmp_path: Path) -> None:
    m = parse(GOOD, tmp_path / "grade.yaml")
    assert m.names() == ["pause", "on-delivery", "quiet", "more"]
    pause, delivery, quiet, more = m.configs
    # -o pairs of the defaults and the configuration add up, the configuration's winning
    assert more.options["option"] == {"lock_at_least": 3, "cron": 10}
    assert pause.weight == 2.0 and quiet.weight == 1.0
    assert pause.argv() == ["--time-limit", "20", "-o", "lock_at_least=2", "--nemesis", "pause"]
    assert delivery.argv() == [
        "--time-limit",
        "10",
        "-o",
        "lock_at_least=2",
        "--trigger",
        "pause worker on delivery",
        "--trigger",
        "kill relay before publish",
        "--schedule",
        str(tmp_path / "plans" / "s.yaml"),
    ]
    assert quiet.options == {"time-limit": 20.0, "option": {"lock_at_least": 2}}
    assert delivery.time_bound() == 10 + matrix.RUN_DEFAULTS.recovery_timeout
    # what the manifest stores reads back the same
    assert matrix.Matrix.from_json(m.to_json()) == m


def _err(text: str) -> str:
    with pytest.raises(MatrixError) as e:
        parse(text, Path("g.yaml"))
    return str(e.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("configs:\n  - name: a\n    run:\n      nemsis: pause\n", "g.yaml:4: configs[0].run.nemsis: not a `chaos run` option"),
        ("configs:\n  - name: a\n    run:\n      seed: 3\n", "g.yaml:4: configs[0].run.seed: not allowed in a matrix"),
        ("configs:\n  - name: a\n  - name: b\n    run: {time-limit: soon}\n", "g.yaml:4: configs[1].run.time-limit: expected a number"),
        ("configs:\n  - name: a\n    run: {tasks: 2.5}\n", "g.yaml:3: configs[0].run.tasks: expected an integer"),
        ("configs:\n  - weight: 2\n", "g.yaml:2: configs[0].name: missing"),
        ("configs:\n  - name: a\n  - name: a\n", "g.yaml:3: configs[1].name: 'a' is used twice"),
        ("configs:\n  - name: a b\n", "g.yaml:2: configs[0].name: letters, digits"),
        ("configs:\n  - name: a\n    weight: 0\n", "g.yaml:3: configs[0].weight: must be above 0"),
        ("configs:\n  - name: a\n    weight: -1\n", "g.yaml:3: configs[0].weight: must not be negative"),
        ("configs:\n  - name: a\n    wieght: 2\n", "g.yaml:3: configs[0].wieght: unknown field"),
        ("config:\n  - name: a\n", "g.yaml:1: config: unknown key"),
        ("defaults:\n  nemesis: pause\n", "g.yaml:1: configs: missing"),
        ("configs: []\n", "g.yaml:1: configs: expected a non-empty list"),
        ("", "g.yaml:1: configs: missing"),
        ("configs:\n  - name: a\n    run: [1]\n", "g.yaml:3: configs[0].run: expected a mapping"),
        ("configs:\n  - name: a\n    run: {nemesis: [pause]}\n", "g.yaml:3: configs[0].run.nemesis: expected a single value"),
        ("configs:\n  - name: a\n    run: {option: {k: [1]}}\n", "g.yaml:3: configs[0].run.option.k: expected a single value"),
        ("defaults:\n  store: /tmp\nconfigs:\n  - name: a\n", "g.yaml:2: defaults.store: not allowed"),
        ("configs:\n  - name: a\n    run: {nemesis: pause, nemesis: kill}\n", "g.yaml:3: configs[0].run.nemesis: given twice"),
        ("configs:\n  - name: [a\n", "g.yaml:3: not valid YAML"),
    ],
)  # fmt: skip
def test_errors_name_file_line_and_field(text: str, expected: str) -> None:
    assert expected in _err(text)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match=r"missing\.yaml: cannot read"):
        matrix.load(tmp_path / "missing.yaml")


def test_the_option_table_is_chaos_runs_own() -> None:
    """Every option a matrix may set is a `chaos run` option, and every `chaos run` option is
    either settable or refused with a reason (a new option must be placed in one of the two)."""
    from chaos.cli.run import run

    longs = {
        o.lstrip("-")
        for p in run.params
        if isinstance(p, click.Option)
        for o in p.opts
        if o.startswith("--")
    } - {"help"}
    # the old spellings of knobs that moved into the workloads' declared options: a matrix
    # reads them as option pairs (test below)
    moved = {o.lstrip("-") for p in run.params if isinstance(p, OldName) and p.key for o in p.opts}
    assert moved == {"ack-wait", "work-seconds"}
    assert set(matrix.OPTIONS) <= longs - moved
    assert longs - moved <= set(matrix.OPTIONS) | set(matrix.REFUSED)


def test_a_workload_option_written_as_a_key_of_its_own_is_an_option_pair(tmp_path: Path) -> None:
    """A matrix written when AckWait was a `chaos run` option still parses, into the pair the
    workload declares; a value its declaration refuses is named by file, line and field."""
    lab3 = registry.get("lab3")
    text = (
        "defaults:\n  ack-wait: 1\n  work_seconds: 0.2\nconfigs:\n  - name: a\n"
        "  - name: b\n    run:\n      ack-wait: 3\n      option: {set_size: 1, ack_wait: 2}\n"
    )
    m = matrix.parse(text, tmp_path / "g.yaml", "lab3", options_of(lab3))
    assert m.get("a").argv() == ["-o", "ack_wait=1", "-o", "work_seconds=0.2"]
    # the configuration's own pairs win over the defaults', an `option` pair over its own key
    assert m.get("b").options["option"] == {"ack_wait": 2, "work_seconds": 0.2, "set_size": 1}
    with pytest.raises(matrix.MatrixError) as e:
        matrix.parse("configs:\n  - name: a\n    run: {ack-wait: 0}\n", tmp_path / "g.yaml",
                     "lab3", options_of(lab3))  # fmt: skip
    assert str(e.value) == (
        f"{tmp_path / 'g.yaml'}:3: configs[0].run.ack-wait: configuration a: lab3 option "
        "ack_wait=0: expected a number > 0"
    )
    # a workload without the option: not a `chaos run` option either
    with pytest.raises(matrix.MatrixError, match="ack-wait: not a `chaos run` option"):
        matrix.parse("configs:\n  - name: a\n    run: {ack-wait: 1}\n", tmp_path / "g.yaml",
                     "lab1", options_of(registry.get("lab1")))  # fmt: skip


@pytest.mark.parametrize("lab", ["lab1", "lab3"])
def test_the_shipped_matrices_parse_into_argv_chaos_run_accepts(lab: str) -> None:
    from chaos.cli.run import run

    wl = registry.get(lab)
    assert isinstance(wl, Gradable)
    m = matrix.load(wl.grade_matrix, lab, options_of(wl))  # its -o options are the lab's own
    assert m.configs
    for c in m.configs:
        ctx = run.make_context("run", [lab, *c.argv(), "--seed", "1"], resilient_parsing=False)
        assert ctx.params["workload"] == lab
    for name, kind in wl.grade_controls.items():
        assert kind in ("reference", "buggy")
        wl.preflight(_spec(lab, name))  # every control is a complete built-in solution
    assert "reference" in wl.grade_controls.values()


def _spec(lab: str, solution: str):  # type: ignore[no-untyped-def]
    from chaos.core.spec import TestSpec

    return TestSpec(workload=lab, solution=solution)


LAB1_OPTIONS = options_of(registry.get("lab1"))


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "defaults:\n  option: {jbo: 20}\nconfigs:\n  - name: a\n",
            "g.yaml:2: defaults.option.jbo: lab1 has no option jbo; did you mean job?; options: "
            "nights, lock_at_least, lock_at_most, cron, job, renew",
        ),
        (
            "configs:\n  - name: a\n    run:\n      option:\n        cron: true\n",
            "g.yaml:5: configs[0].run.option.cron: configuration a: lab1 option cron=true: "
            "expected a number >= 0",
        ),
        (
            "configs:\n  - name: a\n    run:\n      option: {nights: 2.5}\n",
            "g.yaml:4: configs[0].run.option.nights: configuration a: lab1 option nights=2.5: "
            "expected an integer >= 0",
        ),
    ],
)
def test_option_pairs_are_checked_against_the_workloads_declarations(text: str, error: str) -> None:
    with pytest.raises(MatrixError) as e:
        parse(text, Path("g.yaml"), "lab1", LAB1_OPTIONS)
    assert str(e.value) == error
    parse(text, Path("g.yaml"))  # a workload that declares nothing checks its own options


def test_good_option_pairs_pass_and_keep_their_argv() -> None:
    text = "defaults:\n  option: {job: 20}\nconfigs:\n  - name: a\n    run: {option: {nights: 2}}\n"
    m = parse(text, Path("g.yaml"), "lab1", LAB1_OPTIONS)
    assert m.get("a").argv() == ["-o", "job=20", "-o", "nights=2"]
