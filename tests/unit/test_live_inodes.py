"""The live folders the services write hold a bounded number of files (chaos.cluster.docker.quota):
a flood of empty files stops at ENOSPC instead of growing what chaos lists or reads."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from chaos.cluster.docker.quota import Quotas, mount_live, unmount_keeping
from chaos.histories.limits import MAX_CLAIM_FILES, MAX_EVENT_FILES

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.mark.parametrize(
    ("name", "most"), [("events", MAX_EVENT_FILES), ("claims", MAX_CLAIM_FILES)]
)
def test_a_flood_of_files_stops_at_the_folders_quota(tmp_path: Path, name: str, most: int) -> None:
    live = tmp_path / "live"
    (live / name).mkdir(parents=True)
    mounted = mount_live(live, Quotas())
    try:
        assert mounted == [live / name]
        made = 0
        with pytest.raises(OSError) as e:
            for i in range(most * 4):
                (live / name / f"f{i}").touch()
                made += 1
        assert e.value.errno == errno.ENOSPC
        assert made == most, "the folder takes exactly its quota of files"
    finally:
        for target in mounted:
            unmount_keeping(target)
