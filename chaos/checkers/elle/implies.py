"""Anomalies that are forbidden wherever another one is (Elle's anomaly graph, for the kinds the
consistency models do not list by name).

A *future read* (a transaction read a value it wrote only later) is a cycle of one transaction
through a wr edge: G1c. A *dirty update* (a committed write on top of an aborted one) is a
kind of aborted read: G1a. A value appended or written twice leaves a key's version order
unknowable, as duplicate elements in a read do.
"""

from __future__ import annotations

from chaos.checkers.elle.consistency import ConsistencyModel

__all__ = ["IMPLIES", "forbidden_by"]

IMPLIES: dict[str, str] = {
    "future-read": "G1c",
    "dirty-update": "G1a",
    "duplicate-appends": "duplicate-elements",
    "duplicate-writes": "duplicate-elements",
}


def forbidden_by(cm: ConsistencyModel, anomaly: str) -> bool:
    """Whether ``cm`` forbids ``anomaly``, itself or through the anomaly it implies."""
    return cm.forbidden(anomaly) or (anomaly in IMPLIES and cm.forbidden(IMPLIES[anomaly]))
