"""A freeze the container runtime gave up on ("unable to freeze": runc thawed the cgroup again
after its own short wait, seen at load ~15 in the suite) is tried again; any other error is not.
The real freeze runs in tests/integration/test_nemesis_faults.py."""

from __future__ import annotations

import docker.errors
import pytest

from chaos.cluster.docker import cluster

UNABLE = docker.errors.APIError(
    "500 Server Error: Cannot pause container 9507: OCI runtime pause failed: unable to freeze: "
    "unknown"
)


class Container:
    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.calls = 0

    def pause(self) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def test_unable_to_freeze_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "FREEZE_RETRY_PAUSE", 0.0)
    c = Container([UNABLE, UNABLE])
    cluster.pause_retrying(c)
    assert c.calls == 3
    # past the attempts, the runtime's own error is raised
    c = Container([UNABLE] * cluster.FREEZE_ATTEMPTS)
    with pytest.raises(docker.errors.APIError, match="unable to freeze"):
        cluster.pause_retrying(c)
    assert c.calls == cluster.FREEZE_ATTEMPTS


def test_another_error_is_raised_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "FREEZE_RETRY_PAUSE", 0.0)
    c = Container([docker.errors.APIError("409 Conflict: container is not running")])
    with pytest.raises(docker.errors.APIError, match="not running"):
        cluster.pause_retrying(c)
    assert c.calls == 1
