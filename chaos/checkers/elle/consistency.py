"""Consistency models and the anomalies each one forbids (after Adya's thesis and Elle's table).

Each model forbids its weaker neighbours' anomalies and more:

============================  =================================================================
read-uncommitted (PL-1)       G0 (write cycles), duplicate elements, cyclic versions
read-committed (PL-2)         + G1a (aborted read), G1b (intermediate read), G1c (ww/wr cycle),
                              incompatible order, garbage reads
repeatable-read (PL-2.99)     + G-single, G-nonadjacent, G2-item, lost update
snapshot-isolation (PL-SI)    read-committed + G-single, G-nonadjacent, lost update, internal;
                              G2-item (write skew) is allowed
serializable (PL-3)           repeatable-read + snapshot-isolation's: every data cycle, internal
strong-session-serializable   + the ``-process`` variants (a cycle through process order)
strict-serializable (PL-SS)   + the ``-process`` and ``-realtime`` variants
============================  =================================================================

Following Elle, an *internal* anomaly (a read disagreeing with its own transaction's writes) is
forbidden from snapshot isolation and serializability up, not by repeatable read. A model also
names the order edges its cycles may use: process order, real-time order, or neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checkers.elle.graph import PROCESS, REALTIME

__all__ = [
    "CYCLE_TYPES",
    "MODELS",
    "ConsistencyModel",
    "model",
]

CYCLE_TYPES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
_PROCESS_VARIANTS = frozenset(f"{c}-process" for c in CYCLE_TYPES)
_REALTIME_VARIANTS = frozenset(f"{c}-realtime" for c in CYCLE_TYPES)

_RU = frozenset({"G0", "duplicate-elements", "cyclic-versions"})
_RC = _RU | {"G1a", "G1b", "G1c", "incompatible-order", "garbage-read"}
_RR = _RC | {"G-single", "G-nonadjacent", "G2-item", "lost-update"}
_SI = _RC | {"G-single", "G-nonadjacent", "lost-update", "internal"}
_SER = _RR | _SI


@dataclass(frozen=True, slots=True)
class ConsistencyModel:
    name: str
    aka: tuple[str, ...]
    forbids: frozenset[str]
    order_edges: int  # PROCESS / REALTIME bits its cycles may use

    def forbidden(self, anomaly: str) -> bool:
        return anomaly in self.forbids


MODELS: dict[str, ConsistencyModel] = {
    m.name: m
    for m in (
        ConsistencyModel(name="read-uncommitted", aka=("PL-1",), forbids=_RU, order_edges=0),
        ConsistencyModel(name="read-committed", aka=("PL-2",), forbids=_RC, order_edges=0),
        ConsistencyModel(name="repeatable-read", aka=("PL-2.99",), forbids=_RR, order_edges=0),
        ConsistencyModel(
            name="snapshot-isolation", aka=("PL-SI", "si"), forbids=_SI, order_edges=0
        ),
        ConsistencyModel(
            name="serializable",
            aka=("PL-3", "conflict-serializable"),
            forbids=_SER,
            order_edges=0,
        ),
        ConsistencyModel(
            name="strong-session-serializable",
            aka=(),
            forbids=_SER | _PROCESS_VARIANTS,
            order_edges=PROCESS,
        ),
        ConsistencyModel(
            name="strict-serializable",
            aka=("PL-SS", "strong-serializable"),
            forbids=_SER | _PROCESS_VARIANTS | _REALTIME_VARIANTS,
            order_edges=PROCESS | REALTIME,
        ),
    )
}
_ALIASES = {a.lower(): m for m in MODELS.values() for a in (m.name, *m.aka)}
NAMES: tuple[str, ...] = tuple(a for m in MODELS.values() for a in (m.name, *m.aka))


def model(name: str) -> ConsistencyModel:
    """The model called ``name`` (any of its names, any case); ``ValueError`` listing them."""
    m = _ALIASES.get(name.lower())
    if m is None:
        raise ValueError(
            f"unknown consistency model {name!r}; choose one of {', '.join(sorted(MODELS))} "
            f"(or {', '.join(a for m in MODELS.values() for a in m.aka)})"
        )
    return m
