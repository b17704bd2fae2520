"""The grading cluster only its holders can reach (issue 21, part 2).

A real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, over TLS with the
certificates ``chaos grade-certs`` made, grade the in-memory lab3 class through the real
``chaos grade`` command. Before that, the attacks the certificates must stop: a plain TCP client,
a TLS client without a certificate, one with a certificate of another CA — none gets a
connection. The local cluster's sockets are all on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.cli import main
from chaos.grade import certs, dispatch, ledger
from tests.fixtures.grade_class import CHAOS, REPO, make_class
from tests.unit.test_grade_dask import _start, _stop, _wait_scheduler, _wait_workers


def _certs(folder: Path) -> Path:
    r = CliRunner().invoke(main, ["grade-certs", str(folder), "--scheduler-host", "127.0.0.1"])
    assert r.exit_code == 0, r.output
    return folder


def test_certs_are_made_once_with_owner_only_keys(tmp_path: Path) -> None:
    d = _certs(tmp_path / "tls")
    names = sorted(p.name for p in d.iterdir())
    assert names == sorted(
        ["ca.pem", "ca-key.pem"] + [f"{r}{s}" for r in certs.ROLES for s in (".pem", "-key.pem")]
    )
    for p in d.iterdir():
        mode = p.stat().st_mode & 0o777
        assert mode == (0o600 if p.name.endswith("-key.pem") else 0o644), (p.name, oct(mode))
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    r = CliRunner().invoke(main, ["grade-certs", str(d)])
    assert r.exit_code == 3 and "not empty" in r.output
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before, "no key was replaced"


def _own_listeners() -> set[str]:
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    mine = f"pid={os.getpid()},"
    return {line.split()[3] for line in out.splitlines() if mine in line}


def test_the_local_clusters_sockets_are_on_loopback_only() -> None:
    before = _own_listeners()
    with dispatch.connect(None, 1) as client:
        opened = _own_listeners() - before
        port = int(client.dashboard_link.split(":")[2].split("/")[0])
    assert opened, "the local cluster opened its dashboard"
    assert all(a.rsplit(":", 1)[0] in ("127.0.0.1", "[::1]") for a in opened), opened
    assert any(a.endswith(f":{port}") for a in opened)
    # and an address of this machine other than loopback does not answer on the dashboard's port
    others = [
        a
        for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
        if ":" not in a
    ]
    for addr in others:
        with pytest.raises(OSError), socket.create_connection((addr, port), 2):
            pass


def _refused(address: str, security: object) -> bool:
    from distributed import Client

    try:
        Client(address, timeout="4s", security=security).close()
    except (OSError, TimeoutError):
        return True
    return False


def _tls_refused(port: int, ca: Path, cert: tuple[Path, Path] | None) -> bool:
    """A TLS client that trusts the cluster's CA, with ``cert`` (or none), as an attacker would
    write it: whether the scheduler ends the connection. A scheduler that accepts one sends its
    handshake at once (the control below receives it), so silence is not taken for a refusal."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
    ctx.check_hostname = False
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), 4) as raw,
            ctx.wrap_socket(raw) as s,
        ):
            s.settimeout(4)
            s.sendall(b"\0" * 64)  # TLS 1.3 reports a refused certificate after the handshake
            return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # ssl.SSLError among them: the alert that refuses the certificate
        return True


def test_a_tls_grade_across_two_workers_passes_and_no_one_without_a_certificate_connects(
    tmp_path: Path,
) -> None:
    from distributed import Client

    tls = _certs(tmp_path / "tls")
    stranger = _certs(tmp_path / "other-ca")  # a valid certificate, from another authority
    sched_file = tmp_path / "scheduler.json"
    py = sys.executable
    ca = ["--tls-ca-file", str(tls / "ca.pem")]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            _start(
                [py, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                 "--port", "0", "--dashboard-address", "127.0.0.1:0", *ca,
                 "--tls-cert", str(tls / "scheduler.pem"),
                 "--tls-key", str(tls / "scheduler-key.pem"),
                 "--scheduler-file", str(sched_file)],
                tmp_path / "scheduler.log",
            )
        )  # fmt: skip
        address = _wait_scheduler(sched_file, procs[0], tmp_path / "scheduler.log")
        port = int(address.rsplit(":", 1)[1])
        for name in ("w1", "w2"):
            procs.append(
                _start(
                    [py, "-m", "distributed.cli.dask_worker", address, "--name", name,
                     "--nthreads", "2", "--resources", "runs=1", "--no-dashboard",
                     "--host", "127.0.0.1", "--death-timeout", "60", *ca,
                     "--tls-cert", str(tls / "worker.pem"),
                     "--tls-key", str(tls / "worker-key.pem")],
                    tmp_path / f"{name}.log",
                )
            )  # fmt: skip
        with Client(address, timeout="30s", security=certs.client_security(tls)) as client:
            _wait_workers(client, 2)
            workers = set(client.scheduler_info()["workers"])
        assert all(w.startswith("tls://") for w in workers), workers

        # the attacks: no TLS; TLS but no certificate; a certificate the cluster's CA never signed
        assert _refused(f"tcp://127.0.0.1:{port}", None)
        assert _tls_refused(port, tls / "ca.pem", None)
        assert _tls_refused(port, tls / "ca.pem", (stranger / "client.pem",
                                                   stranger / "client-key.pem"))  # fmt: skip
        assert _refused(address, certs.client_security(stranger))
        # control: the same raw client with the cluster's own client certificate is read
        assert not _tls_refused(port, tls / "ca.pem", (tls / "client.pem", tls / "client-key.pem"))
        logs = (tmp_path / "scheduler.log").read_text()

        subs = make_class(tmp_path / "subs", "alice", "bob")
        out = tmp_path / "out"
        p = subprocess.run(
            [py, "-m", "tests.fixtures.grade_cli", "grade", str(subs), "--workload", "memory-lab3",
             "--repeats", "1", "--seed", "3", "--out", str(out), "--scheduler", address,
             "--certs", str(tls), "--chaos-command", " ".join(CHAOS)],
            capture_output=True, text=True, timeout=400, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert p.returncode == 0, p.stdout + p.stderr
        lines = [json.loads(x) for x in (out / ledger.LEDGER).read_text().splitlines()]
        # 4 rows (2 students, 2 controls) x 2 configurations, each once, on the TLS workers
        assert len({(x["student"], x["config"]) for x in lines}) == len(lines) == 8, lines
        assert {x["worker"] for x in lines} <= workers
        passed = {(x["student"], x["config"]): x["status"] for x in lines}
        assert passed[("alice", "pause")] == "valid" and passed[("bob", "quiet")] == "valid"
        assert passed[("bob", "pause")] == "invalid"
        assert "tls" in logs.lower()
    finally:
        for proc in reversed(procs):
            _stop(proc)
