"""`chaos check FILE --model M` starts without the workloads: importing them (etcd3, grpc,
networkx) cost a 100k-op history's check 0.5 s of its ~1.5 s (docs/benchmarks.md); nor the
report's HTTP server (http.server, email: ~0.03 s); nor importlib.metadata (~0.01 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the workloads and their clients, the Docker SDK, plotting, the report's HTTP server
_HEAVY = (
    "chaos.workloads.registry",
    "etcd3",
    "grpc",
    "networkx",
    "docker",
    "matplotlib",
    "http.server",
    "chaos.report.serve",
    "chaos.report.page",
    "importlib.metadata",  # the backends' plugins, looked up only when a backend is asked for
)
_PROBE = f"""
import sys
HEAVY = {_HEAVY!r}
from chaos.cli import main
try:
    main([*sys.argv[1:], "--model", "cas-register"], prog_name="chaos")
except SystemExit as e:
    code = e.code
heavy = sorted(m for m in HEAVY if m in sys.modules)
print(code, ",".join(heavy))
"""


def test_check_of_a_history_file_imports_no_workload(tmp_path: Path) -> None:
    history = tmp_path / "h.edn"
    history.write_text(
        "{:type :invoke, :f :write, :value 1, :time 1, :process 0, :index 0}\n"
        "{:type :ok, :f :write, :value 1, :time 2, :process 0, :index 1}\n"
        "{:type :invoke, :f :read, :value nil, :time 3, :process 1, :index 2}\n"
        "{:type :ok, :f :read, :value 1, :time 4, :process 1, :index 3}\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, "check", str(history)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.splitlines()[-1]
    assert out == "0 ", out  # valid, and none of the workloads' imports
