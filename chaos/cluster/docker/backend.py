"""The Docker backend: the local engine, the offline node image, reaping by label."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import chaos
from chaos.cluster.base import Cluster, Progress
from chaos.cluster.docker import image
from chaos.cluster.docker.cluster import DockerCluster
from chaos.cluster.docker.reap import reap
from chaos.cluster.docker.resources import engine
from chaos.cluster.node_kit import software

# the source tree the nodes import chaos's node-side code from (mounted read-only)
SRC_DIR = Path(chaos.__file__).resolve().parents[1]


class DockerBackend:
    name = "docker"

    def __init__(self) -> None:
        self._client: Any = None
        self._tag: str | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = engine()
        return self._client

    def prepare(self, progress: Progress) -> dict[str, str]:
        client = self.client
        leftovers = reap(client)
        if leftovers:
            progress(f"removed {len(leftovers)} resource(s) left by a crashed earlier run")
        self._tag = image.build_image(client, progress)
        return {
            "chaos": chaos.__version__,
            **software.versions(),
            "node_image": self._tag,
            "host_python": platform.python_version(),
        }

    def supports(self, capability: type) -> bool:
        """Whether this backend's clusters have an optional capability (see ``Capable``)."""
        return issubclass(DockerCluster, capability)

    def reap(self, *, run_id: str | None = None, include_live: bool = False) -> list[str]:
        return reap(self.client, run_id=run_id, include_live=include_live)

    def make_cluster(
        self, *, run_id: str, nodes: int, live_dir: Path, mounts: dict[str, str]
    ) -> Cluster:
        if self._tag is None:
            self._tag = image.build_image(self.client, lambda m: None)
        return DockerCluster(
            run_id=run_id,
            nodes=nodes,
            image=self._tag,
            src_dir=SRC_DIR,
            live_dir=live_dir,
            extra_mounts=mounts,
            client=self.client,
        )

    def build_image(self, progress: Progress, *, force: bool = False) -> str:
        """``chaos image build``: the node image, rebuilt with ``force``."""
        self._tag = image.build_image(self.client, progress, force=force)
        return self._tag
