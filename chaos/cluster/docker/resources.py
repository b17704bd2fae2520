"""The Docker resources of chaos's runs, found by label: which runs are orphaned, removing one.

Everything the backend creates carries ``chaos.project=chaos`` and ``chaos.run=<run id>``; nothing
without them is ever touched.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import docker
import docker.errors

from chaos.cluster.base import ClusterError
from chaos.cluster.docker import firewall
from chaos.cluster.node_kit.owner import owner_alive

LABEL_PROJECT = "chaos.project"
LABEL_RUN = "chaos.run"
LABEL_OWNER = "chaos.owner"
LABEL_LIVE = "chaos.live"
PROJECT = "chaos"
# how long a network may keep the endpoint of a container another process is still removing
NETWORK_WAIT = 30.0


def engine() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except Exception as e:
        raise ClusterError(
            "no Docker engine answers: start it (`scripts/bootstrap` installs docker.io and starts "
            f"dockerd), or set DOCKER_HOST ({type(e).__name__}: {e})"
        ) from e


def list_containers(client: Any, filters: dict[str, Any]) -> list[Any]:
    """The containers that match, skipping any removed while the list was being read.

    The SDK's ``containers.list`` inspects each container it lists and raises NotFound when one
    is removed in between — which another run tearing down on the same engine does all the time.
    """
    out = []
    for row in client.api.containers(all=True, filters=filters):
        try:
            out.append(client.containers.get(row["Id"]))
        except docker.errors.NotFound:
            continue
    return out


def run_filter(run_id: str | None = None) -> dict[str, list[str]]:
    labels = [f"{LABEL_PROJECT}={PROJECT}"]
    if run_id is not None:
        labels.append(f"{LABEL_RUN}={run_id}")
    return {"label": labels}


def live_of(client: Any, run_id: str) -> str | None:
    """The live folder a run's containers are labelled with (where its faults.json is)."""
    for c in list_containers(client, run_filter(run_id)):
        live = (c.labels or {}).get(LABEL_LIVE)
        if live:
            return str(live)
    return None


def orphaned_runs(client: docker.DockerClient) -> dict[str, str | None]:
    """Runs whose orchestrator is gone: run id -> its live folder (where faults.json lives)."""
    runs: dict[str, str | None] = {}
    alive: set[str] = set()
    flt = {"label": [f"{LABEL_PROJECT}={PROJECT}"]}
    for obj in [
        *list_containers(client, flt),
        *client.networks.list(filters=flt),
        *client.volumes.list(filters=flt),
    ]:
        labels = obj.attrs.get("Config", {}).get("Labels") or obj.attrs.get("Labels") or {}
        rid = labels.get(LABEL_RUN)
        if rid is None:
            continue
        if owner_alive(labels.get(LABEL_OWNER)):
            alive.add(rid)
        runs.setdefault(rid, labels.get(LABEL_LIVE))
    return {r: live for r, live in runs.items() if r not in alive}


# a loaded engine can answer a removal with an error of its own ("did not receive an exit event")
# and succeed when asked again; a run's verdict must not be lost to it
REMOVE_ATTEMPTS = 3
REMOVE_RETRY_PAUSE = 1.0
# containers removed at once (every chaos run's, when a reaper removes them all)
REMOVE_SIDE_BY_SIDE = 8


def remove_container(c: Any) -> bool:
    """Thaw if paused, then force-remove ``c`` with its anonymous volumes, asking again after an
    engine error; whether this call removed it (not when it was gone, or another process was
    removing it already). The last attempt's error is raised."""
    for attempt in range(1, REMOVE_ATTEMPTS + 1):
        try:
            if c.status == "paused":
                c.unpause()
            c.remove(force=True, v=True)
            return True
        except docker.errors.NotFound:
            return False
        except docker.errors.APIError as e:
            # another process (the run's own teardown, a second cleanup) is removing it already
            if _in_progress(e):
                return False
            if attempt == REMOVE_ATTEMPTS or not e.is_server_error():
                raise  # a conflict of another kind is no engine's hiccup: said at once
            time.sleep(REMOVE_RETRY_PAUSE)
            with contextlib.suppress(docker.errors.APIError):
                c.reload()
    return False


def remove_run(client: docker.DockerClient, run_id: str | None) -> list[str]:
    """Remove the containers, host rules, networks and volumes of one run (or of every chaos run
    when ``run_id`` is None).

    Paused containers are thawed first (a frozen container cannot be killed cleanly on cgroup v1).
    The run's host chain goes after its containers (never a moment with a node and no confinement)
    and before its network (whose label is how a reaper finds the run). Returns what it removed.
    Only resources labelled ``chaos.project=chaos`` and the run's own chain are ever touched.
    """
    flt = [f"{LABEL_PROJECT}={PROJECT}"]
    if run_id is not None:
        flt.append(f"{LABEL_RUN}={run_id}")
    removed: list[str] = []
    containers = list_containers(client, {"label": flt})
    # side by side: a removal is mostly the engine stopping and unmounting (three nodes one after
    # another took 0.70-0.84 s of a 14-17 s run, docs/benchmarks.md); every removal is tried
    # before the first error is raised, so one stuck container leaves no other behind
    with ThreadPoolExecutor(max_workers=max(1, min(REMOVE_SIDE_BY_SIDE, len(containers)))) as pool:
        futures = [(c, pool.submit(remove_container, c)) for c in containers]
    errors: list[BaseException] = []
    for c, f in futures:
        if (e := f.exception()) is not None:
            errors.append(e)
        elif f.result():
            removed.append(f"container {c.name}")
    if errors:
        raise errors[0]
    runs = firewall.all_runs() if run_id is None else {run_id}
    removed += firewall.remove_all(runs)
    for n in client.networks.list(filters={"label": flt}):
        if _remove_network(n):
            removed.append(f"network {n.name}")
    for v in client.volumes.list(filters={"label": flt}):
        try:
            v.remove(force=True)
            removed.append(f"volume {v.name}")
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if not _in_progress(e) and e.status_code != 409:  # 409: a container still uses it
                raise
    return removed


def _remove_network(n: Any) -> bool:
    """Remove one network; False when it was gone already.

    A container whose removal another process began (the run's own teardown, or a second reaper:
    every ``chaos run`` reaps dead runs as it starts) keeps its endpoint on the network until that
    removal ends, and the engine refuses the network meanwhile: retry until it lets go.
    """
    deadline = time.monotonic() + NETWORK_WAIT
    while True:
        try:
            n.remove()
            return True
        except docker.errors.NotFound:
            return False
        except docker.errors.APIError as e:
            if "active endpoints" not in str(e.explanation or e) or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _in_progress(e: docker.errors.APIError) -> bool:
    return e.status_code == 409 and "already in progress" in str(e.explanation or e)
