"""The Docker backend's listing of its resources tolerates another run tearing down meanwhile."""

from __future__ import annotations

from typing import Any

import docker.errors

from chaos.cluster.docker.resources import list_containers


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
