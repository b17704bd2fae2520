"""What a loaded engine gives up on is asked again: a freeze ("unable to freeze": runc thawed the
cgroup again after its own short wait, seen at load ~15 in the suite) and a removal that failed
with an engine error; any other error is raised at once. The real freeze runs in
tests/integration/test_nemesis_faults.py."""

from __future__ import annotations

import docker.errors
import pytest
import requests

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


class Removable:
    """A container whose removal fails with ``errors`` first; a paused one is thawed."""

    def __init__(self, errors: list[Exception], status: str = "running") -> None:
        self.errors, self.status = errors, status
        self.removes = 0
        self.unpaused = False

    def unpause(self) -> None:
        self.unpaused, self.status = True, "running"

    def reload(self) -> None:
        pass

    def remove(self, force: bool, v: bool) -> None:
        self.removes += 1
        if self.errors:
            raise self.errors.pop(0)


def _api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(str(status), response=response, explanation=explanation)


ENGINE = _api_error(500, "did not receive an exit event")


def test_a_removal_the_engine_failed_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from chaos.cluster.docker import resources

    monkeypatch.setattr(resources, "REMOVE_RETRY_PAUSE", 0.0)
    c = Removable([ENGINE, ENGINE], status="paused")
    assert resources.remove_container(c) is True
    assert c.removes == 3 and c.unpaused
    c = Removable([ENGINE] * resources.REMOVE_ATTEMPTS)
    with pytest.raises(docker.errors.APIError, match="exit event"):
        resources.remove_container(c)
    # gone already, or being removed by another process: not ours, and no error
    assert resources.remove_container(Removable([docker.errors.NotFound("gone")])) is False
    busy = _api_error(409, "removal of container abc is already in progress")
    assert resources.remove_container(Removable([busy])) is False
    # another conflict is said at once, not asked again
    c = Removable([_api_error(409, "something else is wrong")])
    with pytest.raises(docker.errors.APIError, match="something else"):
        resources.remove_container(c)
    assert c.removes == 1


def test_a_runs_containers_go_side_by_side_and_one_failure_leaves_none_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """remove_run removes the run's nodes at once (each waits on the engine); a node the engine
    will not remove is raised only after every other node was asked and removed."""
    import threading

    from chaos.cluster.docker import firewall, resources

    monkeypatch.setattr(resources, "REMOVE_RETRY_PAUSE", 0.0)
    at_once = threading.Barrier(3, timeout=5)  # breaks (and fails the test) one after another

    class Node(Removable):
        def __init__(self, name: str, errors: list[Exception]) -> None:
            super().__init__(errors)
            self.name = name

        def remove(self, force: bool, v: bool) -> None:
            if self.removes == 0:
                at_once.wait()
            super().remove(force, v)

    nodes = [
        Node("n1", []),
        Node("n2", [ENGINE] * resources.REMOVE_ATTEMPTS),
        Node("n3", []),
    ]

    class Empty:
        def list(self, filters: object) -> list[object]:
            return []

    class Client:
        networks = volumes = Empty()

    monkeypatch.setattr(resources, "list_containers", lambda client, filters: nodes)
    monkeypatch.setattr(firewall, "remove_all", lambda runs: [])
    with pytest.raises(docker.errors.APIError, match="exit event"):
        resources.remove_run(Client(), "r1")
    assert [n.removes for n in nodes] == [1, resources.REMOVE_ATTEMPTS, 1]
