"""chaos: a Jepsen-style chaos test orchestrator.

The public surface is small and re-exported here; everything else is private to its subpackage.
"""

from chaos.checkers.verdict import CheckResult, Verdict, combine
from chaos.histories.ops import Event, Op, OpType

__version__ = "0.1.0"

__all__ = ["CheckResult", "Event", "Op", "OpType", "Verdict", "__version__", "combine"]
