"""What a check can conclude besides its verdict: the models the anomalies found rule out, and
why a history with no forbidden anomaly still cannot be called consistent.

Following Elle (``elle.txn/result-map``): the result names, from *every* anomaly found (allowed
ones too), the weakest models they rule out (``not``) and the stronger ones (``also_not``); and
a history whose dependency graph has no edge at all proves nothing (Elle's
``:empty-transaction-graph``, valid? ``:unknown``). chaos adds one case Elle leaves valid: a
model that forbids no anomaly a transactional history can show (linearizable, causal, …).
"""

from __future__ import annotations

from collections.abc import Iterable

from chaos.checkers.elle import lattice
from chaos.checkers.elle.consistency import ConsistencyModel
from chaos.checkers.elle.graph import DepGraph

__all__ = ["nothing_to_check", "rules_out"]


def rules_out(anomalies: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(not, also_not)`` for the anomaly types found (chaos's names)."""
    return lattice.boundary(lattice.ELLE_NAME.get(a, a) for a in anomalies)


def nothing_to_check(cm: ConsistencyModel, graph: DepGraph) -> str | None:
    """Why no history could be found inconsistent with ``cm`` here, or None."""
    if not cm.forbids:
        return (
            f"{cm.name} forbids no anomaly a history of transactions can show (Elle's model "
            "lattice names none), so nothing could rule it out"
        )
    if not graph.pair_count():
        return (
            "no dependency between any two transactions could be inferred (an empty "
            "transaction graph), so no cycle could have been found"
        )
    return None
