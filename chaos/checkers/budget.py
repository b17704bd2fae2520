"""The default budgets of the checkers that search: how long, and over how many states.

The linearizability search (:mod:`chaos.checkers.linearizable`), Elle's transaction checks
(:mod:`chaos.checkers.elle.check`) and ``chaos check --model``'s options
(:mod:`chaos.checkers.history_file`) share them. The standard library only: the command line imports this
without loading a checker.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_STATES", "DEFAULT_TIME_LIMIT"]

# seconds a search may take before its verdict is unknown (out of budget)
DEFAULT_TIME_LIMIT = 60.0
# configurations the linearizability search may visit before its verdict is unknown
DEFAULT_MAX_STATES = 5_000_000
