"""One kept-open SSH connection per node: commands over channels, files over SFTP.

Every step is bounded: connecting (TCP, banner, authentication) by ``CONNECT_TIMEOUT``, opening a
channel and every command by its own timeout, so an unreachable or hung node fails in seconds with
its name instead of hanging the run. Host keys are checked against a known_hosts file: an unknown
key is refused unless the nodes file accepts new keys explicitly, and a *changed* key is always
refused, naming the node and both fingerprints.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import paramiko

from chaos.cluster.base import ClusterError, ExecResult
from chaos.cluster.ssh.nodes import NodeSpec

# the TCP connection (an unreachable node), then the banner and authentication, each bounded: a
# node that is down is named within seconds, whatever the rest of the nodes do
CONNECT_TIMEOUT = 3.0
HANDSHAKE_TIMEOUT = 5.0
CHANNEL_TIMEOUT = 5.0


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's form: ``SHA256:<base64 without padding>``."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_id(node: NodeSpec) -> str:
    """How known_hosts names a host (``[host]:port`` unless the port is 22)."""
    return node.host if node.port == 22 else f"[{node.host}]:{node.port}"


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """Records a key never seen before in the known_hosts file (only when asked to)."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._path, "a") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


class Connection:
    """A node's SSH connection; reconnects once if the transport died between calls."""

    def __init__(self, node: NodeSpec, known_hosts: Path, *, accept_new: bool = False) -> None:
        self.node = node
        self._known = known_hosts
        self._accept_new = accept_new
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()
        self._sftp_lock = threading.Lock()

    # ------------------------------------------------------------ connecting

    def _connect(self) -> paramiko.SSHClient:
        node = self.node
        client = paramiko.SSHClient()
        if self._known.exists():
            client.load_host_keys(str(self._known))
        elif not self._accept_new:
            raise ClusterError(
                f"{node.label}: no known_hosts file {self._known}; add the node's host key there, "
                "or set accept_new_host_keys: true in the nodes file to record it on first use"
            )
        client.set_missing_host_key_policy(
            _AcceptNew(self._known) if self._accept_new else paramiko.RejectPolicy()
        )
        try:
            client.connect(
                node.host,
                port=node.port,
                username=node.user,
                key_filename=str(node.key) if node.key else None,
                allow_agent=node.agent,
                look_for_keys=False,
                timeout=CONNECT_TIMEOUT,
                banner_timeout=HANDSHAKE_TIMEOUT,
                auth_timeout=HANDSHAKE_TIMEOUT,
                channel_timeout=CHANNEL_TIMEOUT,
            )
        except paramiko.BadHostKeyException as e:
            raise ClusterError(
                f"{node.label}: host key CHANGED — refusing to connect. known_hosts "
                f"{self._known} has {fingerprint(e.expected_key)}, the node offers "
                f"{fingerprint(e.key)} ({e.key.get_name()}). If the machine was reinstalled, "
                f"remove its line (ssh-keygen -R '{host_id(node)}' -f {self._known}); otherwise "
                "someone may be in between"
            ) from e
        except paramiko.SSHException as e:
            if "not found in known_hosts" in str(e):
                raise ClusterError(
                    f"{node.label}: host key not in {self._known}; add it, or set "
                    "accept_new_host_keys: true in the nodes file to record it on first use"
                ) from e
            raise ClusterError(f"{node.label}: SSH failed: {e}") from e
        except (TimeoutError, OSError) as e:
            raise ClusterError(
                f"{node.label}: unreachable within {CONNECT_TIMEOUT:.0f} s "
                f"({type(e).__name__}: {e})"
            ) from e
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(5)
        return client

    def client(self) -> paramiko.SSHClient:
        with self._lock:
            c = self._client
            t = c.get_transport() if c is not None else None
            if c is None or t is None or not t.is_active():
                self._sftp = None
                self._client = c = self._connect()
            return c

    def close(self) -> None:
        with self._lock:
            if self._sftp is not None:
                self._sftp.close()
            if self._client is not None:
                self._client.close()
            self._sftp = None
            self._client = None

    # ------------------------------------------------------------ commands

    def run(
        self,
        script: str,
        *,
        timeout: float = 60.0,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a shell command line on the node; output is stdout and stderr combined.

        A command still running at ``timeout`` is abandoned (its channel closed) and reported with
        exit code 124, like coreutils' ``timeout``."""
        transport = self.client().get_transport()
        if transport is None:
            raise ClusterError(f"{self.node.label}: SSH connection lost")
        try:
            chan = transport.open_session(timeout=CHANNEL_TIMEOUT)
        except (paramiko.SSHException, OSError) as e:
            raise ClusterError(f"{self.node.label}: cannot open an SSH channel: {e}") from e
        try:
            chan.set_combine_stderr(True)
            chan.settimeout(timeout)
            chan.exec_command(script)
            if stdin is not None:
                chan.sendall(stdin)
                chan.shutdown_write()
            out = bytearray()
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return ExecResult(124, f"timed out after {timeout}s: {script[:200]}")
                chan.settimeout(left)
                try:
                    data = chan.recv(65536)
                except TimeoutError:
                    return ExecResult(124, f"timed out after {timeout}s: {script[:200]}")
                if not data:
                    break  # EOF: the command closed its output
                out += data
            code = chan.recv_exit_status()
            return ExecResult(code, out.decode(errors="replace"))
        finally:
            chan.close()

    def run_argv(self, argv: list[str], **kw: Any) -> ExecResult:
        return self.run(shlex.join(argv), **kw)

    def open_session(self, command: str) -> paramiko.Channel:
        """A channel running ``command``, left open for the caller (a clock probe's dialogue)."""
        transport = self.client().get_transport()
        if transport is None:
            raise ClusterError(f"{self.node.label}: SSH connection lost")
        chan = transport.open_session(timeout=CHANNEL_TIMEOUT)
        chan.exec_command(command)
        return chan

    # ------------------------------------------------------------ files

    def sftp(self) -> paramiko.SFTPClient:
        c = self.client()
        with self._lock:
            if self._sftp is None:
                self._sftp = c.open_sftp()
                self._sftp.get_channel().settimeout(30.0)  # type: ignore[union-attr]
            return self._sftp

    def put(self, path: str, data: bytes) -> None:
        with self._sftp_lock, self.sftp().open(path, "wb") as fh:
            fh.write(data)

    def put_atomic(self, path: str, data: bytes) -> None:
        """Write aside, then rename into place: a reader never sees a half-written file."""
        folder, _, name = path.rpartition("/")
        tmp = f"{folder}/.{name}.tmp"
        with self._sftp_lock:
            sftp = self.sftp()
            with sftp.open(tmp, "wb") as fh:
                fh.write(data)
            sftp.posix_rename(tmp, path)

    def get(self, path: str, offset: int = 0) -> bytes | None:
        with self._sftp_lock:
            try:
                with self.sftp().open(path, "rb") as fh:
                    if offset:
                        fh.seek(offset)
                    return bytes(fh.read())
            except FileNotFoundError:
                return None
            except PermissionError:
                return None

    def listdir_sizes(self, path: str) -> dict[str, int]:
        with self._sftp_lock:
            try:
                return {a.filename: int(a.st_size or 0) for a in self.sftp().listdir_attr(path)}
            except FileNotFoundError:
                return {}

    def put_file(self, local: Path, remote: str) -> None:
        with self._sftp_lock:
            self.sftp().put(str(local), remote)

    def remove(self, path: str) -> bool:
        with self._sftp_lock:
            try:
                self.sftp().remove(path)
                return True
            except FileNotFoundError:
                return False

    def exists(self, path: str) -> bool:
        with self._sftp_lock:
            try:
                self.sftp().stat(path)
                return True
            except FileNotFoundError:
                return False
