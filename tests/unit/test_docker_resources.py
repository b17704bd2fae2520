"""The Docker backend's listing of its resources tolerates another run tearing down meanwhile."""

from __future__ import annotations

from typing import Any

import docker.errors
import pytest
import requests

from chaos.cluster.docker.resources import list_containers, remove_run


class _Api:
    def containers(self, **kw: Any) -> list[dict[str, str]]:
        return [{"Id": "gone"}, {"Id": "here"}]


class _Containers:
    def get(self, cid: str) -> str:
        if cid == "gone":  # removed by another run between the list and the inspect
            raise docker.errors.NotFound("no such container")
        return f"container {cid}"


class _Client:
    api = _Api()
    containers = _Containers()


def test_a_container_removed_while_listing_is_skipped_not_raised() -> None:
    assert list_containers(_Client(), {"label": ["chaos.project=chaos"]}) == ["container here"]


class _Doomed:
    def __init__(self, name: str, explanation: str) -> None:
        self.name, self.status, self._explanation = name, "running", explanation

    def remove(self, **kw: Any) -> None:
        response = requests.Response()
        response.status_code = 409
        raise docker.errors.APIError("409", response=response, explanation=self._explanation)


def test_a_container_another_process_is_removing_is_skipped_and_other_conflicts_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    busy = _Doomed("chaos-r-n1", "removal of container x is already in progress")
    monkeypatch.setattr(
        "chaos.cluster.docker.resources.list_containers", lambda client, flt: [busy]
    )

    class Networks:
        def list(self, **kw: Any) -> list[Any]:
            return []

    class Client:
        networks = Networks()
        volumes = Networks()  # the run's log volumes: none left here

    assert remove_run(Client(), "r") == []  # type: ignore[arg-type]
    busy._explanation = "something else is wrong"
    with pytest.raises(docker.errors.APIError):
        remove_run(Client(), "r")  # type: ignore[arg-type]


class _BusyNetwork:
    """A network whose last endpoint goes after ``busy`` refusals (another process's container
    removal ending), or never."""

    def __init__(self, busy: int) -> None:
        self.name, self.busy, self.removed = "chaos-r", busy, False

    def remove(self) -> None:
        if self.busy:
            self.busy -= 1
            response = requests.Response()
            response.status_code = 403
            raise docker.errors.APIError(
                "403",
                response=response,
                explanation="error while removing network: network chaos-r has active endpoints",
            )
        self.removed = True


def test_a_network_is_removed_once_another_removal_lets_go_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("chaos.cluster.docker.resources.list_containers", lambda client, flt: [])
    monkeypatch.setattr("chaos.cluster.docker.resources.NETWORK_WAIT", 0.5)
    net = _BusyNetwork(busy=2)

    class Networks:
        def __init__(self, items: list[Any]) -> None:
            self.items = items

        def list(self, **kw: Any) -> list[Any]:
            return self.items

    class Client:
        networks = Networks([net])
        volumes = Networks([])

    assert remove_run(Client(), "r") == ["network chaos-r"]  # type: ignore[arg-type]
    assert net.removed
    net.busy, net.removed = 10**9, False  # a container that never lets go: the error stands
    with pytest.raises(docker.errors.APIError, match="active endpoints"):
        remove_run(Client(), "r")  # type: ignore[arg-type]
    assert not net.removed
