"""chaos: a Jepsen-style chaos test orchestrator.

The public surface is small and re-exported here; everything else is private to its subpackage.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaos.checkers.verdict import CheckResult, Verdict, combine
    from chaos.histories.ops import Event, Op, OpType

__version__ = "0.1.0"

__all__ = ["CheckResult", "Event", "Op", "OpType", "Verdict", "__version__", "combine"]

# Loaded on first use, not here: the services in the node containers import modules under
# ``chaos`` with only the node image's packages (no msgspec, no Docker SDK), and importing a
# submodule runs this file first.
_EXPORTS = {
    "CheckResult": "chaos.checkers.verdict",
    "Verdict": "chaos.checkers.verdict",
    "combine": "chaos.checkers.verdict",
    "Event": "chaos.histories.ops",
    "Op": "chaos.histories.ops",
    "OpType": "chaos.histories.ops",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chaos' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
