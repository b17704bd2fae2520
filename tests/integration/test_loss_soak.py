"""lab3's reference under lossy links, alone and mixed with pause, kill and partition (issue 14,
acceptance 3): 5 seeds each, every run valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.histories.store import load_run
from tests.integration.conftest import chaos, run_dir_from

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LOAD = ("--rate", "4", "--time-limit", "10", "--nemesis-interval", "1.5", "--fault-duration", "2",
        "-o", "ack_wait=1", "-q")  # fmt: skip


@pytest.mark.parametrize("nemesis", ["packet-loss", "packet-loss,pause,kill,partition"])
def test_lab3_reference_valid_under_loss_5_seeds(store: Path, nemesis: str) -> None:
    codes = []
    for seed in range(1, 6):
        p = chaos("run", "lab3", "--nemesis", nemesis, *LOAD, "--seed", str(seed), store=store)
        codes.append(p.returncode)
        # the fault really happened, measured by its probe on every lossy direction
        run = load_run(run_dir_from(p))
        measured = [
            o.value["measured"] for o in run.history
            if o.extra.get("fault") == "packet-loss" and o.extra.get("phase") == "start"
            and isinstance(o.value, dict) and "measured" in o.value
        ]  # fmt: skip
        assert measured or nemesis != "packet-loss", "no packet-loss took effect"
        assert all(abs(v - 0.3) <= 0.10 for m in measured for v in m.values()), measured
    assert codes == [0] * 5, codes
