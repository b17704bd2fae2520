"""`chaos grade`'s refusals: each one exit 3 with a message naming what is wrong, before any run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.grade import ledger


def _grade(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["grade", *args])
    return r.exit_code, r.output


@pytest.fixture
def subs(tmp_path: Path) -> Path:
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "subs" / "alice" / "protocol.py").write_text("x = 1\n")
    return tmp_path / "subs"


def test_a_malformed_matrix_is_named_by_file_line_and_field(tmp_path: Path, subs: Path) -> None:
    bad = tmp_path / "grade.yaml"
    bad.write_text("configs:\n  - name: a\n    run:\n      nemsis: pause\n")
    code, out = _grade(
        str(subs), "--workload", "lab3", "--matrix", str(bad), "--out", str(tmp_path / "o")
    )
    assert code == 3
    assert f"{bad}:4: configs[0].run.nemsis: not a `chaos run` option" in out
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("option", "line", "says"),
    [
        (
            "set_sise: 1",
            5,
            "lab3 has no option set_sise; did you mean set_size?; options: set_size",
        ),
        ("set_size: 4", 5, "lab3 option set_size=4: expected 1, 2 or 3"),
    ],
)
def test_a_workload_option_the_lab_does_not_declare_stops_the_grade_before_any_run(
    tmp_path: Path, subs: Path, option: str, line: int, says: str
) -> None:
    bad = tmp_path / "grade.yaml"
    bad.write_text(
        f"configs:\n  - name: ok\n  - name: small\n    run:\n      option: {{{option}}}\n"
    )
    code, out = _grade(
        str(subs), "--workload", "lab3", "--matrix", str(bad), "--out", str(tmp_path / "o")
    )
    assert code == 3
    key = option.split(":")[0]
    where = f"{bad}:{line}: configs[1].run.option.{key}: configuration small: {says}"
    assert where in " ".join(out.split()), out
    assert not (tmp_path / "o").exists()


def test_a_lab_without_a_matrix_is_refused(tmp_path: Path, subs: Path) -> None:
    code, out = _grade(str(subs), "--workload", "etcd-register", "--out", str(tmp_path / "o"))
    assert code == 3 and "etcd-register cannot be graded" in out and "lab3" in out


def test_an_existing_grade_is_resumed_not_overwritten(tmp_path: Path, subs: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / ledger.LEDGER).write_text("")
    code, said = _grade(str(subs), "--workload", "lab3", "--out", str(out))
    assert code == 3 and f"--resume {out}" in said
    code, said = _grade("--resume", str(tmp_path))
    assert code == 3 and "not a grade's out folder" in said
    code, said = _grade("--resume", str(out), "--workload", "lab3")
    assert code == 3 and "--resume takes the grade's own settings" in said
    code, said = _grade()
    assert code == 3 and "give a submissions folder and --workload" in said


def test_controls_are_all_the_labs_unless_chosen_and_a_resume_keeps_the_choice(
    tmp_path: Path, subs: Path
) -> None:
    from chaos.grade.session import GradeRequest, rows_of
    from chaos.grade.start import GradeArgs, request_of
    from chaos.workloads.lab3.workload import Lab3

    def rows(controls: tuple[str, ...] | None) -> list[str]:
        args = GradeArgs(
            submissions=subs, lab="lab3", seed=1, out=tmp_path / "o", controls=controls
        )
        req = request_of(args, lambda m: None)
        again = GradeRequest.from_json(req.to_json(), req.out)  # what --resume reads back
        assert again.controls == req.controls
        return [r.name for r in rows_of(again, Lab3.grade_controls) if r.is_control]

    assert rows(None) == [f"control:{n}" for n in Lab3.grade_controls]
    assert rows(("reference", "lost-update")) == ["control:reference", "control:lost-update"]
    assert rows(()) == []
    code, out = _grade(str(subs), "--workload", "lab3", "--controls", "reference,nonesuch",
                       "--out", str(tmp_path / "x"))  # fmt: skip
    assert code == 3 and "--controls: no shipped solution nonesuch" in out


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "127.0.0.1:1", "ws://127.0.0.1:1"])
def test_a_plain_scheduler_is_refused_without_insecure_before_anything_is_written(
    tmp_path: Path, subs: Path, address: str
) -> None:
    out = tmp_path / "o"
    code, said = _grade(str(subs), "--workload", "lab3", "--scheduler", address, "--out", str(out))
    assert code == 3, said
    lines = said.strip().splitlines()
    assert len(lines) == 1, said  # one line: why, and what to do
    assert f"--scheduler {address}: refused" in lines[0]
    assert "as root on every worker" in lines[0]
    assert "chaos grade-certs DIR" in lines[0] and "--insecure" in lines[0]
    assert not out.exists()


def test_tls_needs_certs_and_certs_need_tls(tmp_path: Path, subs: Path) -> None:
    out = tmp_path / "o"
    code, said = _grade(str(subs), "--workload", "lab3", "--scheduler", "tls://127.0.0.1:1",
                        "--out", str(out))  # fmt: skip
    assert code == 3 and "give --certs DIR" in said
    empty = tmp_path / "empty"
    empty.mkdir()
    code, said = _grade(str(subs), "--workload", "lab3", "--scheduler", "tls://127.0.0.1:1",
                        "--certs", str(empty), "--out", str(out))  # fmt: skip
    assert code == 3 and "no ca.pem, client.pem, client-key.pem there" in said
    code, said = _grade(str(subs), "--workload", "lab3", "--scheduler", "tcp://127.0.0.1:1",
                        "--certs", str(empty), "--out", str(out))  # fmt: skip
    assert code == 3 and "is not tls://" in said
    code, said = _grade(str(subs), "--workload", "lab3", "--insecure", "--out", str(out))
    assert code == 3 and "go with --scheduler" in said
    assert not out.exists()


def test_insecure_lets_a_plain_scheduler_through_with_a_warning(tmp_path: Path) -> None:
    from chaos.grade.start import GradeArgs, scheduler_security

    said: list[str] = []
    args = GradeArgs(submissions=tmp_path, lab="lab3", scheduler="tcp://h:8786", insecure=True)
    assert scheduler_security(args, said.append) is None
    assert said and "whoever reaches it is root on the workers" in said[0]
