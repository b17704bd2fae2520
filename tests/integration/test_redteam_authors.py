"""Red team, class "forged authors" (issue 20): who wrote a transaction comes from each node's
root-owned etcd proxy journal, never from what the code under test reports.

- ``release_any``: a stopped holder resumes, finishes its job and releases its successor's grant;
  the lock record stays well formed and nothing is applied twice. The default matrix's
  ``holder-stopped-after-grant`` configuration must catch it by the author journal.
- ``forged_authors``: the same, plus ``txn`` events in the other replicas' names: the verdict and
  its author are the journal's.
- ``release_side_channel`` (issue 29, ``-m slow``): ``release_any`` through a key outside
  ``/lab1/``, each lease operation made by its holder: refused by the proxy, ``etcd-scope``.
- ``direct_etcd``: a service that tries to reach etcd around its proxy (its own member, every
  address of its network): every attempt is refused, the proxy answers, the verdict stays valid.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, chaos, run_dir_from

pytestmark = pytest.mark.integration

REDTEAM = REPO / "tests" / "fixtures" / "redteam"
# the default lab1 matrix's configuration (chaos/workloads/lab1/grade.yaml)
HOLDER_STOPPED = ("--trigger", "pause holder after lock-acquired for 6s")
CASES: dict[str, tuple[str, ...]] = {
    "release_any": HOLDER_STOPPED,
    "forged_authors": HOLDER_STOPPED,
    "direct_etcd": (),
}


def _run(name: str, store: Path) -> tuple[str, int, Path, str]:
    p = chaos("run", "lab1", "--solution", str(REDTEAM / name), "--seed", "3", *CASES[name],
              "-q", store=store, timeout=240)  # fmt: skip
    return name, p.returncode, run_dir_from(p), p.stdout + p.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path, str]]:
    store = tmp_path_factory.mktemp("redteam-authors")
    with ThreadPoolExecutor(max_workers=3) as pool:
        return {n: (c, d, o) for n, c, d, o in pool.map(lambda n: _run(n, store), CASES)}


def _result(run: Path, checker: str) -> dict[str, Any]:
    results = json.loads((run / "results.json").read_text())
    items = results["results"] if isinstance(results, dict) else results
    return next(r for r in items if r["checker"] == checker)


@pytest.mark.parametrize("name", ["release_any", "forged_authors"])
def test_a_release_of_another_replicas_grant_is_caught_by_the_author_journal(
    name: str, runs: dict[str, tuple[int, Path, str]]
) -> None:
    code, run, out = runs[name]
    assert code == 1, out
    r = _result(run, "lease-authors")
    assert r["verdict"] == "invalid", out
    ops = [a for a in r["anomalies"] if a["kind"] == "lease-op-by-other"]
    assert ops, r
    a = ops[0]
    touched, own = a["grants"]
    # both grants named: the one touched (another replica's) and the author's own
    assert touched["holder"] != a["author"] and own is not None and own["holder"] == a["author"]
    assert a["source"] == "the nodes' etcd-proxy journals"
    assert a["journal"]["node"] == a["author"] and a["journal"]["revision"] == a["rev"]
    assert "by the nodes' etcd-proxy journals" in r["summary"]


def test_forged_txn_events_do_not_move_the_author(runs: dict[str, tuple[int, Path, str]]) -> None:
    _, run, _ = runs["forged_authors"]
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()[1:] if x]
    forged = [e for e in events if e["kind"] == "txn" and e.get("pid") == 1]
    assert forged, "the forgery did not happen: the test proves nothing"
    a = next(
        x for x in _result(run, "lease-authors")["anomalies"] if x["kind"] == "lease-op-by-other"
    )
    # the forged events name other replicas than the one that wrote; the author is the journal's
    assert {e["node"] for e in forged} - {a["author"]}
    final = json.loads((run / "final.json").read_text())
    line = next(e for e in final["journal"]["entries"] if e.get("revision") == a["rev"]
                and e["node"] == a["author"])  # fmt: skip
    assert any(p["key"] == "/lab1/locks/reconciliation" for p in line["puts"])


def test_a_service_cannot_reach_etcd_around_its_proxy(
    runs: dict[str, tuple[int, Path, str]],
) -> None:
    code, run, out = runs["direct_etcd"]
    probes = [
        json.loads(line)
        for f in sorted((run / "live" / "events").glob("*-probe.jsonl"))
        for line in f.read_text().splitlines()
        if line
    ]
    assert len(probes) == 3, out  # one per replica
    for p in probes:
        direct = p["data"]["direct"]
        assert "127.0.0.1" in direct and len(direct) >= 4
        assert all(v.startswith("refused") for v in direct.values()), direct
        assert p["data"]["proxy"] == "answered"
        # the journal and the proxy's control are out of the service user's reach
        files = p["data"]["files"]
        assert len(files) == 4 and all(v.startswith("refused") for v in files.values()), files
    # and by what chaos observed: no version of the lock record was written around a proxy
    assert code == 0, out
    assert _result(run, "lease-authors")["verdict"] == "valid"
    final = json.loads((run / "final.json").read_text())
    assert all(v.get("token") != 999 for v in final["lock_history"])
    assert set(final["journal"]["nodes"]) == {"n1", "n2", "n3"}


@pytest.mark.slow
def test_a_release_asked_through_a_key_outside_the_prefix_is_refused_and_named(
    tmp_path: Path,
) -> None:
    """Issue 29: ``release_any``'s bug done through ``/side/release`` (the holder shortens its own
    lease when asked), so that every lease operation is its holder's: VALID on main. The proxy
    refuses the key outside ``/lab1/``, and ``etcd-scope`` names the refusal."""
    p = chaos("run", "lab1", "--solution", str(REDTEAM / "release_side_channel"), "--seed", "3",
              *HOLDER_STOPPED, "-q", store=tmp_path, timeout=240)  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    r = _result(run_dir_from(p), "etcd-scope")
    assert r["verdict"] == "invalid", out
    assert "key '/side/release' is outside the lab's prefix '/lab1/'" in r["summary"]
