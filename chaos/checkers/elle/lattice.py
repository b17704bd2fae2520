"""Elle's lattice of consistency models and anomalies, as data, and what a set of anomalies rules out.

Transcribed (data only, no code) from Elle's ``elle.consistency-model`` namespace, repository
``jepsen-io/elle``, ``src/elle/consistency_model.clj`` at commit ``dda36d8`` ("rename ROLA to
Update Atomic"); the sources of each edge (Adya, Bailis, Cerone, Daudjee, …) are cited there.
Three graphs:

- :data:`IMPLIED_ANOMALIES`: ``a -> b`` when finding ``a`` means ``b`` happened too (``G0``
  is also ``G1c``; a lost update is also ``G2-item``);
- :data:`MODEL_IMPLIES`: ``m -> n`` when a history satisfying ``m`` satisfies ``n``, over
  canonical names (:data:`CANONICAL`);
- :data:`PROSCRIBES`: the anomalies each model forbids beyond the models it implies.

A model forbids every anomaly that implies one which it, or a model it implies, proscribes
(:func:`prohibited_by`). Found anomalies rule out every model forbidding one of them and every
model stronger than those; :func:`boundary` splits that set as Elle's ``:not`` (the weakest ruled
out) and ``:also-not`` (the rest).

chaos's transactions read and write single items, never predicates, so each cycle it finds is
what Elle names the ``-item`` variant (:data:`ELLE_NAME`). :data:`CHAOS_IMPLIED` holds the
edges chaos adds for its own anomalies: a read of a value no transaction wrote is at least a
dirty read; a duplicate append or write is a duplicate element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "ALL_MODELS",
    "CANONICAL",
    "CHAOS_IMPLIED",
    "ELLE_NAME",
    "FRIENDLY",
    "IMPLIED_ANOMALIES",
    "MODEL_IMPLIES",
    "PROSCRIBES",
    "boundary",
    "canonical",
    "friendly",
    "impossible_models",
    "prohibited_by",
    "strongest",
    "weakest",
]

_V = ("", "-process", "-realtime")

IMPLIED_ANOMALIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    "G-single-item": ("G-single", "G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": (
        "G-single-process",
        "G-single-item-realtime",
        "G-nonadjacent-item-process",
    ),
    "G-single-item-realtime": ("G-single-realtime", "G-nonadjacent-item-realtime"),
    "G-single": ("G-nonadjacent", "GSIb", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent-item": ("G-nonadjacent", "G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": (
        "G-nonadjacent-process",
        "G2-item-process",
        "G-nonadjacent-item-realtime",
    ),
    "G-nonadjacent-item-realtime": ("G2-item-realtime", "G-nonadjacent-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2-process": ("G2-realtime",),
    "GSIa": ("GSI",),
    "GSIb": ("GSI",),
    "incompatible-order": ("G1a",),
    "future-read": ("G1c",),
    "dirty-update": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
}

CHAOS_IMPLIED: dict[str, tuple[str, ...]] = {
    "garbage-read": ("G1a",),
    # a value appended or written twice: the key's version order is as unknowable as when a
    # read shows an element twice
    "duplicate-appends": ("duplicate-elements",),
    "duplicate-writes": ("duplicate-elements",),
}

# chaos's name for a cycle -> Elle's (item-only cycles; see the module docstring)
ELLE_NAME: dict[str, str] = {
    f"{base}{v}": f"{base}-item{v}" for base in ("G-single", "G-nonadjacent") for v in _V
}

CANONICAL: dict[str, str] = {
    "consistent-view": "PL-2+",
    "conflict-serializable": "PL-3",
    "cursor-stability": "PL-CS",
    "forward-consistent-view": "PL-FCV",
    "monotonic-snapshot-read": "PL-MSR",
    "monotonic-view": "PL-2L",
    "read-committed": "PL-2",
    "read-uncommitted": "PL-1",
    "repeatable-read": "PL-2.99",
    "serializable": "PL-3",
    "snapshot-isolation": "PL-SI",
    "strict-serializable": "PL-SS",
    "strong-serializable": "PL-SS",
    "update-serializable": "PL-3U",
    "strong-session-read-uncommitted": "strong-session-PL-1",
    "strong-session-read-committed": "strong-session-PL-2",
    "strong-read-uncommitted": "strong-PL-1",
    "strong-read-committed": "strong-PL-2",
}

# Elle's inverse map picks "strong-serializable" for PL-SS by hash order; chaos says
# "strict-serializable" (its default model's name), as Adya does.
FRIENDLY: dict[str, str] = {
    **{c: f for f, c in CANONICAL.items() if c not in ("PL-3", "PL-SS")},
    "PL-3": "serializable",
    "PL-SS": "strict-serializable",
}

_MODELS_AS_WRITTEN: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("read-atomic",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "conflict-serializable": ("view-serializable",),
    "cursor-stability": ("read-committed", "PL-2"),
    "forward-consistent-view": ("consistent-view",),
    "PL-2": ("PL-1",),
    "PL-3": ("repeatable-read", "update-serializable"),
    "update-serializable": ("forward-consistent-view",),
    "monotonic-atomic-view": ("read-committed",),
    "monotonic-view": ("PL-2",),
    "monotonic-snapshot-read": ("PL-2",),
    "parallel-snapshot-isolation": ("causal-cerone", "update-atomic"),
    "prefix": ("causal-cerone",),
    "read-atomic": ("monotonic-atomic-view",),
    "read-committed": ("read-uncommitted",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "update-atomic": ("read-atomic",),
    "serializable": ("repeatable-read", "snapshot-isolation", "view-serializable"),
    "session-serializable": ("1SR",),
    "snapshot-isolation": (
        "forward-consistent-view",
        "monotonic-atomic-view",
        "monotonic-snapshot-read",
        "parallel-snapshot-isolation",
        "prefix",
    ),
    "strict-serializable": (
        "PL-3",
        "serializable",
        "linearizable",
        "snapshot-isolation",
        "strong-snapshot-isolation",
        "strong-session-serializable",
    ),
    "strong-session-PL-1": ("PL-1",),
    "strong-session-PL-2": ("PL-2", "strong-session-PL-1"),
    "strong-PL-1": ("strong-session-PL-1",),
    "strong-PL-2": ("strong-session-PL-2", "strong-PL-1"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-PL-2"),
    "strong-serializable": ("session-serializable",),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-PL-2"),
    "linearizable": ("sequential",),
    "sequential": ("causal",),
    "causal": ("writes-follow-reads", "PRAM"),
    "PRAM": ("monotonic-reads", "monotonic-writes", "read-your-writes"),
}

_PROSCRIBES_AS_WRITTEN: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a"),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "monotonic-snapshot-read": ("G1", "G-MSR"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "PL-3": ("G1", "G2", "predicate-read-miss", "PL-3-cycle-exists"),
    "PL-2": ("G1", "PL-2-cycle-exists"),
    "PL-1": ("G0", "duplicate-elements", "cyclic-versions", "PL-1-cycle-exists"),
    "prefix": ("internal", "G1a"),
    "serializable": ("internal",),
    "snapshot-isolation": ("internal", "G1", "G-SI", "G-nonadjacent", "PL-SI-cycle-exists"),
    "read-atomic": ("internal", "G1a", "future-read"),
    "repeatable-read": ("G1", "G2-item", "PL-2.99-cycle-exists", "lost-update"),
    "update-atomic": ("lost-update",),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime", "PL-SS-cycle-exists"),
    "strong-session-PL-1": ("strong-session-PL-1-cycle-exists", "G0-process"),
    "strong-session-PL-2": ("strong-session-PL-2-cycle-exists", "G1c-process"),
    "strong-PL-1": ("strong-PL-1-cycle-exists", "G0-realtime"),
    "strong-PL-2": ("strong-PL-2-cycle-exists", "G1c-realtime"),
    "strong-session-snapshot-isolation": (
        "internal",
        "G1-process",
        "G-nonadjacent-process",
        "strong-session-snapshot-isolation-cycle-exists",
    ),
    "strong-snapshot-isolation": (
        "internal",
        "G1-realtime",
        "G-nonadjacent-realtime",
        "strong-snapshot-isolation-cycle-exists",
    ),
    "strong-session-serializable": (
        "G1-process",
        "G2-process",
        "strong-session-serializable-cycle-exists",
    ),
    "update-serializable": ("G1", "G-update"),
}


def canonical(name: str) -> str:
    """A model's canonical name (Elle's: ``serializable`` -> ``PL-3``)."""
    return CANONICAL.get(name, name)


def friendly(name: str) -> str:
    """A canonical model name as people say it (``PL-3`` -> ``serializable``)."""
    return FRIENDLY.get(name, name)


def _canonical_graph(g: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for a, bs in g.items():
        out.setdefault(canonical(a), set()).update(canonical(b) for b in bs)
    return {k: frozenset(v) for k, v in out.items()}


MODEL_IMPLIES = _canonical_graph(_MODELS_AS_WRITTEN)
PROSCRIBES: dict[str, frozenset[str]] = {
    canonical(m): frozenset(a) for m, a in _PROSCRIBES_AS_WRITTEN.items()
}
ALL_MODELS: frozenset[str] = frozenset(
    {*MODEL_IMPLIES, *(b for bs in MODEL_IMPLIES.values() for b in bs), *CANONICAL.values()}
)
_ANOMALY_GRAPH = {**IMPLIED_ANOMALIES, **CHAOS_IMPLIED}


def _reverse(g: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    r: dict[str, set[str]] = {}
    for a, bs in g.items():
        for b in bs:
            r.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in r.items()}


_MODEL_IMPLIED_BY = _reverse(MODEL_IMPLIES)
_ANOMALY_IMPLIED_BY = _reverse(_ANOMALY_GRAPH)
_PROSCRIBED_BY = _reverse(PROSCRIBES)


def _reach(step: Callable[[str], Iterable[str]], start: Iterable[str]) -> set[str]:
    """Every vertex reachable from ``start`` by ``step``, ``start`` included."""
    seen = set(start)
    todo = list(seen)
    while todo:
        for n in step(todo.pop()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _known(models: Iterable[str]) -> list[str]:
    ms = [canonical(m) for m in models]
    unknown = [m for m in ms if m not in ALL_MODELS]
    if unknown:
        raise ValueError(f"unknown consistency model(s): {', '.join(unknown)}")
    return ms


def prohibited_by(models: Iterable[str]) -> frozenset[str]:
    """Every anomaly (Elle's names) whose presence breaks one of ``models``."""
    implied = _reach(lambda m: MODEL_IMPLIES.get(m, ()), _known(models))
    direct = {a for m in implied for a in PROSCRIBES.get(m, ())}
    return frozenset(_reach(lambda a: _ANOMALY_IMPLIED_BY.get(a, ()), direct))


def impossible_models(anomalies: Iterable[str]) -> frozenset[str]:
    """The canonical models no history with ``anomalies`` (Elle's names) satisfies."""
    implied = _reach(lambda a: _ANOMALY_GRAPH.get(a, ()), anomalies)
    direct = {m for a in implied for m in _PROSCRIBED_BY.get(a, ())}
    return frozenset(_reach(lambda m: _MODEL_IMPLIED_BY.get(m, ()), direct))


def _extremes(models: Iterable[str], step: Mapping[str, frozenset[str]]) -> frozenset[str]:
    ms = {canonical(m) for m in models}
    return frozenset(
        m for m in ms if not (ms - {m}) & _reach(lambda x: step.get(x, ()), step.get(m, ()))
    )


def weakest(models: Iterable[str]) -> frozenset[str]:
    """The members of ``models`` implied by the others (canonical names)."""
    return _extremes(models, MODEL_IMPLIES)


def strongest(models: Iterable[str]) -> frozenset[str]:
    """The members of ``models`` implying the others (canonical names)."""
    return _extremes(models, _MODEL_IMPLIED_BY)


def boundary(anomalies: Iterable[str]) -> tuple[list[str], list[str]]:
    """Elle's ``(:not, :also-not)`` for found ``anomalies``: the weakest models they rule out,
    and the other models they rule out, both sorted, by friendly name."""
    impossible = impossible_models(anomalies)
    is_not = weakest(impossible)
    return (
        sorted(friendly(m) for m in is_not),
        sorted(friendly(m) for m in impossible - is_not),
    )
