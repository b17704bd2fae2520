"""Consistency models for the transactional checker: every model of Elle's lattice
(:mod:`.lattice`), each with the anomalies it forbids and the order edges its cycles may use.

A model forbids exactly what Elle's ``anomalies-prohibited-by`` says; the usual ones:

============================  =================================================================
read-uncommitted (PL-1)       G0 (write cycles), duplicate elements, cyclic versions
read-committed (PL-2)         + G1a (aborted read), G1b (intermediate read), G1c (ww/wr cycle),
                              incompatible order, dirty update, future read, garbage reads
repeatable-read (PL-2.99)     + G-single, G-nonadjacent, G2-item (all item cycles), lost update
snapshot-isolation (PL-SI)    read-committed + G-single, G-nonadjacent, lost update, internal;
                              G2-item (write skew) is allowed
serializable (PL-3)           repeatable-read + snapshot-isolation's
strong-session-serializable   + the ``-process`` variants (a cycle through process order)
strict-serializable (PL-SS)   + the ``-process`` and ``-realtime`` variants
============================  =================================================================

and the others of the lattice (strong and strong-session SI, read atomic, update atomic,
cursor stability, PL-2+, parallel SI, …). Some models (linearizable, causal, PRAM, …) forbid
no transactional anomaly Elle knows: a history checked against one of them can only be
``unknown``. A model counts process order when it forbids a ``-process`` anomaly, and real-time
order (which orders each process's transactions too) when it forbids a ``-realtime`` one.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.elle import lattice
from chaos.checkers.elle.graph import PROCESS, REALTIME

__all__ = [
    "CYCLE_TYPES",
    "MODELS",
    "UNDECIDABLE",
    "ConsistencyModel",
    "model",
]

CYCLE_TYPES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")


@dataclass(frozen=True, slots=True)
class ConsistencyModel:
    name: str
    aka: tuple[str, ...]
    forbids: frozenset[str]  # Elle's anomaly names and chaos's names for them
    order_edges: int  # PROCESS / REALTIME bits its cycles may use

    def forbidden(self, anomaly: str) -> bool:
        return anomaly in self.forbids


def _model(canon: str) -> ConsistencyModel:
    elle = lattice.prohibited_by([canon])
    ours = {a for a, e in lattice.ELLE_NAME.items() if e in elle}
    edges = 0
    if any(a.endswith("-realtime") for a in elle):
        edges = PROCESS | REALTIME
    elif any(a.endswith("-process") for a in elle):
        edges = PROCESS
    name = lattice.friendly(canon)
    aka = sorted({canon, *(f for f, c in lattice.CANONICAL.items() if c == canon)} - {name})
    return ConsistencyModel(name=name, aka=tuple(aka), forbids=elle | ours, order_edges=edges)


_ALL = {m.name: m for m in sorted(map(_model, lattice.ALL_MODELS), key=lambda m: m.name)}
# the models a history of transactions can break: a check against one of them can fail
MODELS: dict[str, ConsistencyModel] = {n: m for n, m in _ALL.items() if m.forbids}
# accepted, but no transactional anomaly breaks them (linearizable, causal, ...): unknown
UNDECIDABLE: dict[str, ConsistencyModel] = {n: m for n, m in _ALL.items() if not m.forbids}
_ALIASES = {a.lower(): m for m in _ALL.values() for a in (m.name, *m.aka)}
NAMES: tuple[str, ...] = tuple(a for m in _ALL.values() for a in (m.name, *m.aka))


def model(name: str) -> ConsistencyModel:
    """The model called ``name`` (any of its names, any case); ``ValueError`` listing them."""
    m = _ALIASES.get(name.lower())
    if m is None:
        raise ValueError(
            f"unknown consistency model {name!r}; choose one of {', '.join(sorted(_ALL))} "
            f"(or {', '.join(a for m in _ALL.values() for a in m.aka)})"
        )
    return m
