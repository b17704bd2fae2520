"""Adding a run option, a workload option or a backend option is one declaration (issue 33).

Each test copies the package into a scratch tree, adds one declaration there and nothing else,
and finds the option where it must be: ``chaos run --help``, the grade matrix, the stored spec
(a run option), the ``-o`` help and the matrix's check (a workload option), the commands that
take a backend's option and the matrix's refusal (a backend option).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _scratch(tmp_path: Path, file: str, anchor: str, added: str) -> Path:
    """A copy of the package with ``added`` written after the line ``anchor`` of ``file``."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "chaos", root / "chaos", ignore=shutil.ignore_patterns("__pycache__"))
    path = root / "chaos" / file
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, anchor
    path.write_text(text.replace(anchor, anchor + added), encoding="utf-8")
    return root


def _python(root: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    env["DOCKER_HOST"] = "unix:///nonexistent/chaos-test/docker.sock"  # nothing asks the engine
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=root,  # `-c` puts the folder it runs in first on the path
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def _help(root: Path, command: str) -> str:
    return _python(
        root,
        "import sys\nfrom click.testing import CliRunner\nfrom chaos.cli import main\n"
        f"r = CliRunner().invoke(main, [{command!r}, '--help'], terminal_width=200)\n"
        "print(r.output)",
    )


def test_a_run_option_declared_once_is_in_the_help_the_matrix_and_the_stored_spec(
    tmp_path: Path,
) -> None:
    warmup = (
        "    warmup: float = run_option(\n"
        '        1.5, SECONDS, "Seconds (> 0) of warm-up before the first fault.", commands=RUN\n'
        "    )\n"
    )
    anchor = 'else the bound on the fault phase."\n    )\n'
    root = _scratch(tmp_path, "core/spec.py", anchor, warmup)

    assert "--warmup" in _help(root, "run") and "Seconds (> 0) of warm-up" in _help(root, "run")
    assert "--warmup" not in _help(root, "explore")  # declared for `chaos run` only
    out = _python(
        root,
        "import json\nfrom pathlib import Path\nfrom chaos.cli.run import run\n"
        "from chaos.grade import matrix\nfrom chaos.orchestrator import plan\n"
        "m = matrix.parse('configs:\\n  - name: a\\n    run: {warmup: 2}\\n', Path('g.yaml'))\n"
        "p = dict(run.make_context('run', ['lab3', '--warmup', '2.5', '--seed', '4']).params)\n"
        "del p['quiet'], p['nodes_arg']\n"
        "got = plan.plan_runs(plan.RunRequest.of(p, nodes=None, argv=('run',)))\n"
        "(spec,) = got.specs\n"
        "print(json.dumps({'argv': m.configs[0].argv(), 'spec': spec.to_json(),\n"
        "                  'rerun': spec.run_argv()}))",
    )
    found = json.loads(out)
    assert found["argv"] == ["--warmup", "2"]
    assert found["spec"]["warmup"] == 2.5
    assert found["rerun"][-4:] == ["--warmup", "2.5", "--seed", "4"]


def test_a_workload_option_declared_once_is_in_the_help_and_the_matrix(tmp_path: Path) -> None:
    anchor = "OPTIONS: tuple[WorkloadOption, ...] = (\n"
    added = '    WorkloadOption("drain", int, 2, "tasks left to drain", low=0),\n'
    root = _scratch(tmp_path, "workloads/lab3/workload.py", anchor, added)
    assert "drain=N>=0" in _help(root, "run")
    out = _python(
        root,
        "from pathlib import Path\nfrom chaos.core.capabilities import options_of\n"
        "from chaos.grade import matrix\nfrom chaos.workloads import registry\n"
        "declared = options_of(registry.get('lab3'))\n"
        "m = matrix.parse('configs:\\n  - name: a\\n    run: {option: {drain: 5}}\\n',\n"
        "                 Path('g.yaml'), 'lab3', declared)\n"
        "print(m.configs[0].argv())\n"
        "try:\n"
        "    matrix.parse('configs:\\n  - name: a\\n    run: {option: {drain: -1}}\\n',\n"
        "                 Path('g.yaml'), 'lab3', declared)\n"
        "except matrix.MatrixError as e:\n"
        "    print(e)\n",
    )
    assert "['-o', 'drain=5']" in out
    assert "lab3 option drain=-1: expected an integer >= 0" in out


def test_a_backend_option_declared_once_is_taken_by_its_commands(tmp_path: Path) -> None:
    anchor = "OPTIONS: tuple[option.RunOption, ...] = (NODES_FILE,"
    added = (
        " option.RunOption(name='ssh_port', type=option.Number(int, min=1, max=65535),"
        " default=None,"
        " help='The port sshd listens on.', commands=frozenset({'run', 'cleanup'}),"
        " matrix='every machine of the grade listens on one port'),"
    )
    root = _scratch(tmp_path, "cluster/ssh/options.py", anchor, added)
    assert "--ssh-port" in _help(root, "run") and "--ssh-port" in _help(root, "cleanup")
    assert "--ssh-port" not in _help(root, "explore")
    out = _python(
        root,
        "from pathlib import Path\nfrom chaos.grade import matrix\nfrom chaos.orchestrator import plan\n"
        "print(plan.rerun_extra('ssh', Path('s'), {'ssh_port': 2222}))\n"
        "try:\n"
        "    matrix.parse('configs:\\n  - name: a\\n    run: {ssh-port: 22}\\n', Path('g.yaml'))\n"
        "except matrix.MatrixError as e:\n"
        "    print(e)\n",
    )
    assert "'--ssh-port', '2222'" in out
    assert "not allowed in a matrix: every machine of the grade listens on one port" in out


def test_the_grading_guide_lists_the_options_the_table_lets_a_matrix_set() -> None:
    """docs/grading.md names every option a configuration may set, and no other: the list
    follows the declarations (a new option that a matrix may set fails here until it is named)."""
    import re

    from chaos.grade import matrix

    text = (REPO / "docs" / "grading.md").read_text(encoding="utf-8")
    start = text.index("Options a configuration may set:")
    listed = re.findall(r"`([a-z-]+)`", text[start : text.index("(`time_limit`", start)])
    assert sorted(listed) == sorted(matrix.OPTIONS)
    refused = text[text.index("`seed`, `solution`") : text.index("are the grade's own")]
    assert set(re.findall(r"`([a-z-]+)`", refused)) <= set(matrix.REFUSED)
