"""Suite-wide hooks: tests marked ``corpus`` skip, saying why, when the shared corpus is absent."""

from __future__ import annotations

import pytest

from tests.corpus import SHARED_DATA


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(
        reason=f"the shared corpus {SHARED_DATA} is absent (a clone without ../shared beside it)"
    )
    for item in items:
        if item.get_closest_marker("corpus") is not None:
            item.add_marker(skip)
