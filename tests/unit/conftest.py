"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages without the three matplotlib plots, for tests about other sections: drawing them
    costs about a second of CPU per page. The plot tests (test_report_render.py) draw them."""
    from chaos.report import plots  # matplotlib: only for the tests that render

    monkeypatch.setattr(plots, "make_plots", lambda *_a, **_k: [])
