"""lab3 reference stays valid under each fault and under all of them, over five seeds each.

Load mode (4 tasks/s for 10 s) with a fault drawn every ~1.5 s for 2 s: ``pause`` (the lab's own,
the busy worker), ``freeze`` (one node's container), ``kill`` (one node's whole system: etcd, the
services, and the broker when it lands on n1), ``partition`` (a random shape) and the four mixed.
Every run must end valid with every fault healed and every accepted task completed.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.conftest import chaos, read_jsonl, run_dir_from

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FAULTS = ["pause", "freeze", "kill", "partition", "pause,freeze,kill,partition"]
SEEDS = [1, 2, 3, 4, 5]
ARGS = [
    "--rate", "4", "--time-limit", "10", "--nemesis-interval", "1.5", "--fault-duration", "2",
    "-o", "ack_wait=1", "--recovery-timeout", "60", "-q",
]  # fmt: skip


@pytest.mark.parametrize("faults", FAULTS)
def test_reference_valid_under_faults(faults: str, tmp_path: Path) -> None:
    t0 = time.monotonic()

    def one(seed: int) -> tuple[int, str, Path]:
        p = chaos("run", "lab3", "--nemesis", faults, "--seed", str(seed), *ARGS, store=tmp_path)
        return p.returncode, p.stdout + p.stderr, run_dir_from(p)

    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(one, SEEDS))
    for code, out, run in outcomes:
        assert code == 0, out
        nem = [o for o in read_jsonl(run / "history.jsonl") if o.get("process") == "nemesis"]
        starts = {o["fault_id"] for o in nem if o["phase"] == "start"}
        heals = {o["fault_id"] for o in nem if o["phase"] == "heal"}
        assert starts, f"no fault was applied in {run}"
        assert starts == heals, f"every fault healed in {run}"
        assert not any(o.get("error") for o in nem), f"a fault failed to apply or heal in {run}"
        final = json.loads((run / "final.json").read_text())
        assert final["recovered"] is True
    elapsed = time.monotonic() - t0
    print(f"\n{faults}: {len(SEEDS)} seeds valid in {elapsed:.0f} s")
