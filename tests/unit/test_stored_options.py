"""A run's workload options are written to ``spec.json`` from the workload's declarations and read
back through the same declarations when the run is checked again (issue 24, item 1): a run stored
before the knobs moved out of the framework's spec (lab3's ``ack_wait`` and ``work_seconds`` at
its top level) is still checked and rendered, with the values it ran with; a stored value the
declarations refuse is a clear error naming the file and field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.core.capabilities import option_values, stored_option_values, with_stored_options
from chaos.core.options import stored
from chaos.core.spec import TestSpec
from chaos.histories.store import load_run
from chaos.workloads.etcd_append import EtcdAppend
from chaos.workloads.lab3.workload import OPTIONS, Lab3
from tests.fixtures import synthetic_runs as runs

pytestmark = pytest.mark.usefixtures("no_plots")

AS_RUN = {"set_size": 3, "ack_wait": 1.0, "work_seconds": 0.2}


def _spec(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "spec.json").read_text())


def test_an_old_spec_reads_back_the_values_it_ran_with(tmp_path: Path) -> None:
    run = load_run(runs.old_spec_lab3(tmp_path / "store"))
    assert run.spec["ack_wait"] == 1.0 and run.spec["options"] == {"set_size": "3"}
    assert with_stored_options(Lab3(), run).spec["options"] == AS_RUN


def test_a_new_spec_is_what_the_workload_read_and_reads_back_the_same() -> None:
    given = TestSpec(workload="lab3", options={"ack_wait": "1", "work_seconds": "0.2"})
    written = {**given.to_json(), "options": option_values(Lab3(), given)}
    assert written["options"] == AS_RUN and "ack_wait" not in given.to_json()
    assert stored_option_values(Lab3(), json.loads(json.dumps(written))) == AS_RUN
    # the defaults are filled in when written: a later change of a default cannot change
    # what a stored run says it ran with
    assert option_values(Lab3(), TestSpec(workload="lab3")) == {
        "set_size": 3,
        "ack_wait": 2.0,
        "work_seconds": 0.5,
    }


def test_chaos_check_and_report_work_on_an_old_run(tmp_path: Path) -> None:
    """The same verdict, checker by checker, as the same run with the spec the fixture writes
    (no etcd record in it: unknown, exit 2, either way)."""
    run_dir = runs.old_spec_lab3(tmp_path / "old")
    checked = CliRunner().invoke(main, ["check", str(run_dir)])
    control = CliRunner().invoke(main, ["check", str(runs.valid_lab3(tmp_path / "now"))])
    assert checked.exit_code == control.exit_code == 2, checked.output
    assert checked.output.splitlines()[:-1] == control.output.splitlines()[:-1]
    assert "VALID   counter: counter 17" in checked.output
    rendered = CliRunner().invoke(main, ["report", str(run_dir)])
    assert rendered.exit_code == 0, rendered.output
    assert Path(rendered.output.strip()).is_file()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"ack_wait": -1}, "lab3 option ack_wait=-1: expected a number > 0"),
        ({"colour": "red"}, "lab3 has no option colour"),
        ("fast", "field 'options': expected an object, got str"),
    ],
)
def test_a_stored_value_the_declarations_refuse_is_exit_3_naming_the_field(
    tmp_path: Path, options: object, said: str
) -> None:
    run_dir = runs.valid_lab3(tmp_path / "store")
    (run_dir / "spec.json").write_text(json.dumps({**_spec(run_dir), "options": options}))
    r = CliRunner().invoke(main, ["check", str(run_dir)])
    assert r.exit_code == 3, r.output
    assert f"{run_dir / 'spec.json'}: field 'options': " in r.output and said in r.output
    assert "Traceback" not in r.output


def test_an_old_top_level_field_counts_only_where_the_workload_declares_it() -> None:
    """lab1 never had an AckWait of its own: an old lab1 spec's ``ack_wait`` is left alone."""
    old = {"workload": "lab1", "ack_wait": 2.0, "options": {}}
    from chaos.workloads.lab1.workload import Lab1

    assert "ack_wait" not in stored_option_values(Lab1(), old)
    # the recorded options win over an old top-level field of the same name
    assert stored("lab3", OPTIONS, {"ack_wait": 9.0, "options": {"ack_wait": 1.0}})["ack_wait"] == 1


def test_a_checker_reads_its_option_through_the_declarations(tmp_path: Path) -> None:
    """etcd-append's checker judges by the stored ``consistency``, typed by its declaration, and
    by the declared default where the spec has none."""
    wl = EtcdAppend()
    assert stored_option_values(wl, {"workload": "etcd-append"})["consistency"] == (
        "strict-serializable"
    )
    assert stored_option_values(wl, {"options": {"consistency": "serializable"}})[
        "consistency"
    ] == ("serializable")
    with pytest.raises(ValueError, match="consistency=nonsense"):
        stored_option_values(
            wl, {"workload": "etcd-append", "options": {"consistency": "nonsense"}}
        )


def test_the_page_shows_the_workloads_options_of_a_new_and_an_old_run(tmp_path: Path) -> None:
    """The workload's knobs left the spec's top level for ``options``: the parameters table
    still shows them, one row each (an old run's top-level ones as they were)."""
    from chaos.report import render

    new = runs.valid_lab3(tmp_path / "new")
    spec = {**_spec(new), "options": AS_RUN}
    (new / "spec.json").write_text(json.dumps(spec))
    page = render(new).read_text()
    for row in ("<th>-o ack_wait</th><td>1</td>", "<th>-o work_seconds</th><td>0.2</td>"):
        assert row in page
    old = render(runs.old_spec_lab3(tmp_path / "old")).read_text()
    assert "<th>ack_wait</th><td>1</td>" in old and "<th>-o set_size</th><td>3</td>" in old
