"""The transactional checker: transactions → dependencies → cycles → a verdict for a model.

:func:`check_transactions` runs the data model's inference, adds the process and real-time
orders the consistency model counts, looks for cycles, names every anomaly found and marks
which ones the model forbids. The verdict is ``invalid`` when a forbidden anomaly was found,
``unknown`` when the history holds no transaction or the exact cycle search ran out of steps or
time before it could find or rule out a type the model forbids, ``valid`` otherwise. Anomalies the model allows are kept in
the result (``forbidden: false``): G-single under read-committed is reported, not failed.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chaos.checkers.budget import DEFAULT_TIME_LIMIT
from chaos.checkers.elle import list_append, rw_register
from chaos.checkers.elle.consistency import CYCLE_TYPES, ConsistencyModel, model
from chaos.checkers.elle.cycles import Found, find_cycles
from chaos.checkers.elle.decidable import nothing_to_check, rules_out
from chaos.checkers.elle.explain import cycle_anomaly
from chaos.checkers.elle.graph import PROCESS, REALTIME
from chaos.checkers.elle.inference import Inference
from chaos.checkers.elle.loading import read_raw_ops
from chaos.checkers.elle.options import VersionOrder
from chaos.checkers.elle.txns import Txn, TxnInputError, transactions
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.jsonl import LineProblem

__all__ = ["DATA_MODELS", "DEFAULT_CONSISTENCY", "check_file", "check_transactions"]

DATA_MODELS = ("list-append", "rw-register")
DEFAULT_CONSISTENCY = "strict-serializable"
MAX_CYCLES = 20  # cycles of one anomaly type explained and kept (all are counted)
_ORDER = (
    # cycles first (they carry the most evidence: the report draws them), weakest first
    *(f"{c}{v}" for v in ("", "-process", "-realtime") for c in CYCLE_TYPES),
    "lost-update",
    "G1a",
    "G1b",
    "garbage-read",
    "internal",
    "future-read",
    "dirty-update",
    "duplicate-elements",
    "duplicate-appends",
    "duplicate-writes",
    "incompatible-order",
    "cyclic-versions",
)


def _infer(
    txns: Sequence[Txn], data_model: str, cm: ConsistencyModel, order: VersionOrder
) -> Inference:
    if data_model == "list-append":
        if order.named():
            # Elle's options are rw-register's: a list's reads show its whole version order
            raise ValueError(
                f"{', '.join(order.named())}: version-order assumptions apply to rw-register "
                "(list-append's reads already give each key's version order)"
            )
        return list_append.infer(txns)
    if data_model == "rw-register":
        if order.transaction_order is not None:
            _named_transactions(txns, order.transaction_order)
        # Writes follow reads where reads see committed data (see rw_register), or if assumed.
        wfr = "G1a" in cm.forbids or order.wfr_keys
        return rw_register.infer(txns, writes_follow_reads=wfr, order=order)
    raise ValueError(f"unknown data model {data_model!r}; choose one of {', '.join(DATA_MODELS)}")


def _named_transactions(txns: Sequence[Txn], order: Mapping[int, int]) -> None:
    """A commit order naming an op that is no transaction is a mistake, not a partial order."""
    known = {t.index for t in txns}
    stray = sorted(i for i in order if i not in known)
    if stray:
        raise TxnInputError(
            f"the commit order names {len(stray)} op(s) that complete no transaction in the "
            f"history (first: :index {stray[0]})"
        )


def _rank(a: dict[str, Any]) -> tuple[int, int, str]:
    t = a["type"]
    return (not a["forbidden"], _ORDER.index(t) if t in _ORDER else len(_ORDER), t)


def check_transactions(
    txns: Sequence[Txn],
    data_model: str,
    consistency: str = DEFAULT_CONSISTENCY,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    skipped: dict[str, int] | None = None,
    order: VersionOrder | None = None,
) -> CheckResult:
    """Check ``txns`` (see :func:`~chaos.checkers.elle.txns.transactions`) against a model;
    ``order``: the version-order assumptions (:mod:`.options`) of an rw-register check."""
    cm = model(consistency)
    name = f"elle-{data_model}"
    t0 = time.monotonic()
    inf = _infer(txns, data_model, cm, order or VersionOrder())
    if cm.order_edges & PROCESS:
        inf.graph.add_process_order(txns)
    if cm.order_edges & REALTIME:
        inf.graph.add_realtime_order(txns)
    t1 = time.monotonic()
    deadline = t1 + (time_limit if time_limit is not None else float("inf"))
    found = find_cycles(inf.graph, cm.order_edges, deadline, cm.forbidden)
    t2 = time.monotonic()
    incomplete = [*inf.incomplete, *inf.graph.incomplete]
    anomalies = _anomalies(found.cycles, inf, txns, cm)
    # every kept case of a type carries the type's total
    by_type = {a["type"]: int(a["count"]) for a in anomalies}
    nothing = nothing_to_check(cm, inf.graph)  # why no history could fail here (Elle: unknown)
    if nothing:
        incomplete = [nothing, *incomplete]
    forbidden = sorted({a["type"] for a in anomalies if a["forbidden"]})
    allowed = sorted({a["type"] for a in anomalies if not a["forbidden"]})
    kinds = {t: sum(1 for x in txns if x.type == t) for t in ("ok", "info", "fail")}
    stats: dict[str, Any] = {
        "consistency": cm.name,
        "txns": kinds,
        "anomaly_types": by_type,
        "ordered_pairs": inf.graph.pair_count(),
        "infer_s": round(t1 - t0, 3),
        "cycles_s": round(t2 - t1, 3),
        **inf.stats,
        **dict(zip(("not", "also_not"), rules_out(by_type), strict=True)),
    }
    if skipped:
        stats["skipped_ops"] = skipped
    if incomplete:
        stats["incomplete"] = incomplete
    if found.unsearched:
        sizes = [size for size, _ in found.unsearched]
        stats["search_cut_short"] = {
            "components": len(sizes),
            "largest": max(sizes),
            "undecided": sorted({t for _, ts in found.unsearched for t in ts}),
        }
    verdict, summary = _verdict(
        cm, len(txns), kinds, by_type, forbidden, allowed, incomplete, found
    )
    return CheckResult(
        checker=name, verdict=verdict, summary=summary, anomalies=anomalies, stats=stats
    )


def _anomalies(
    cycles: Sequence[Any], inf: Inference, txns: Sequence[Txn], cm: ConsistencyModel
) -> list[dict[str, Any]]:
    """Every anomaly found, ranked, each marked forbidden by ``cm`` or not. One cycle per anomaly
    type per component can still be hundreds in a broken history: the shortest MAX_CYCLES of
    each type are explained and kept, all are counted."""
    by_cycle_type: dict[str, list[Any]] = {}
    for c in cycles:
        by_cycle_type.setdefault(c.type, []).append(c)
    anomalies: list[dict[str, Any]] = []
    for kind, cs in by_cycle_type.items():
        cs.sort(key=lambda c: len(c.nodes))
        for c in cs[:MAX_CYCLES]:
            a = cycle_anomaly(c, txns, inf.explainer, cm.forbidden(kind))
            a["count"] = len(cs)
            anomalies.append(a)
    for a in inf.anomalies:
        a["forbidden"] = cm.forbidden(a["type"])
    anomalies += inf.anomalies
    anomalies.sort(key=_rank)
    return anomalies


def _verdict(
    cm: ConsistencyModel,
    n: int,
    kinds: dict[str, int],
    by_type: dict[str, int],
    forbidden: list[str],
    allowed: list[str],
    incomplete: list[str],
    found: Found,
) -> tuple[Verdict, str]:
    """The verdict on ``n`` transactions and its one-line summary: invalid for a forbidden
    anomaly, unknown when nothing may have happened or the search was incomplete or cut short."""
    allowed_note = f" (allowed by {cm.name}: {', '.join(allowed)})" if allowed else ""
    if forbidden:
        return Verdict.INVALID, (
            f"not {cm.name}: {', '.join(f'{t} ({by_type[t]})' for t in forbidden)} "
            f"among {n} transactions{allowed_note}"
        )
    if not kinds["ok"] and not kinds["info"]:
        return Verdict.UNKNOWN, f"no transaction that may have happened among {n}: nothing to check"
    if incomplete:
        return Verdict.UNKNOWN, f"no forbidden anomaly found, but {'; '.join(incomplete)}"
    # a forbidden type the search neither found nor ruled out: never valid
    undecided = sorted({t for _, ts in found.unsearched for t in ts if cm.forbidden(t)})
    if undecided:
        cut = [size for size, ts in found.unsearched if any(map(cm.forbidden, ts))]
        return Verdict.UNKNOWN, (
            f"the cycle search ran out of steps or time in {len(cut)} component(s) (largest: "
            f"{max(cut)} transactions) before finding or ruling out {', '.join(undecided)}, "
            f"which {cm.name} forbids{allowed_note}"
        )
    return Verdict.VALID, f"{n} transactions consistent with {cm.name}{allowed_note}"


def check_file(
    path: Path,
    data_model: str,
    consistency: str = DEFAULT_CONSISTENCY,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    order: VersionOrder | None = None,
) -> tuple[list[CheckResult], list[LineProblem]]:
    """Read a history file (EDN or JSONL, or a run folder's) and check its transactions.

    Raises :class:`~chaos.checkers.elle.loading.NoHistory` when there is no file,
    :class:`~chaos.checkers.elle.txns.TxnInputError` for a history that is not transactions,
    ``ValueError`` for an unknown model name.
    """
    model(consistency)  # an unknown name fails before the file is read
    if data_model not in DATA_MODELS:
        raise ValueError(f"unknown data model {data_model!r}")
    # Hundreds of thousands of tuples and dicts are made and all kept, none in a reference
    # cycle: the cyclic collector walking them again and again would be pure cost.
    enabled = gc.isenabled()
    gc.disable()
    try:
        ops, problems, _ = read_raw_ops(path)
        txns, skipped = transactions(ops)
        del ops
        result = check_transactions(
            txns, data_model, consistency, time_limit=time_limit, skipped=skipped, order=order
        )
    finally:
        if enabled:
            gc.enable()
    return [result], problems
