"""The runs `chaos explore` makes store the `chaos run` that reproduces each one alone."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.core.capabilities import option_values
from chaos.core.spec import TestSpec
from chaos.workloads.lab3.workload import Lab3
from tests.integration.conftest import chaos

pytestmark = pytest.mark.integration


def _spec_of(command: str, monkeypatch: pytest.MonkeyPatch) -> TestSpec:
    """The spec `chaos run` builds from ``command``, caught before anything starts."""
    import chaos.orchestrator.plan as orchestrator  # where `chaos run` calls it

    got: list[TestSpec] = []

    def caught(spec: TestSpec, *_: Any) -> None:
        got.append(spec)
        raise SystemExit(0)

    monkeypatch.setattr(orchestrator, "check_spec", caught)
    argv = shlex.split(command)
    assert argv[:2] == ["chaos", "run"], argv
    r = CliRunner().invoke(main, argv[1:])
    assert r.exit_code == 0 and got, r.output
    return got[0]


def test_each_run_of_an_explore_stores_its_own_chaos_run(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = chaos("explore", "lab3", "--seed", "5", "--budget", "1", "-q", store=store, timeout=600)
    # the reference is valid, and 1 of its 36 points proves nothing about the rest: unknown
    assert p.returncode == 2, p.stdout + p.stderr
    assert "not tried, the budget ended (--budget " in p.stdout, p.stdout
    assert "  kill worker before txn 1 of complete\n" in p.stdout, p.stdout
    pages = re.findall(r"^\s+report: (/\S+)$", p.stdout, re.M)
    assert len(pages) == 2 and all(Path(x).is_file() for x in pages), p.stdout  # every run's
    names = re.findall(r"\((\d{8}T\d{6}-[0-9a-f]+)\)", p.stdout)
    trace = Path(re.search(r"^trace: .*\((/[^)]+)\)$", p.stdout, re.M)[1])  # type: ignore[index]
    runs = [trace, *(store / "lab3" / n for n in names)]
    assert len(runs) == 2, p.stdout
    for run_dir in runs:
        spec = json.loads((run_dir / "spec.json").read_text())
        command = spec["command"]
        assert command.startswith("chaos run lab3 ") and "explore" not in command, command
        assert command.endswith(f"--seed {spec['seed']}") or f"--seed {spec['seed']} " in command
        again = _spec_of(command, monkeypatch)
        for field in ("workload", "solution", "seed", "nodes", "time_limit"):
            assert getattr(again, field) == spec[field], (field, command)
        # spec.json records the option values the workload read (its declared defaults too)
        assert option_values(Lab3(), again) == spec["options"], command
        assert list(again.triggers) == spec["triggers"] and list(again.nemesis) == spec["nemesis"]
    assert json.loads((runs[1] / "spec.json").read_text())["triggers"], "the probe has a trigger"
