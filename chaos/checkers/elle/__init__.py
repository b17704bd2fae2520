"""Elle-style transactional checking (Kingsbury & Alvaro, VLDB 2020), on networkx.

A history of transactions (Jepsen's ``:txn`` ops or chaos's ``f: "txn"``) becomes a graph of
dependencies between transactions — inferred from list-append's traceable versions or from an
rw-register's recoverable ones, plus process and real-time order — whose cycles are Adya's
anomalies. :func:`check_file` / :func:`check_transactions` say which anomalies a consistency
model forbids were found, each cycle explained in words and kept as data.

Modules, one concept each: :mod:`.txns` (ops → transactions), :mod:`.loading` (files → ops),
:mod:`.list_append` and :mod:`.rw_register` (inference; :mod:`.versions` and
:mod:`.version_sources`, a register's version order), :mod:`.options` (the version-order
assumptions a user may make), :mod:`.graph` (edges, components), :mod:`.cycles` (search and
names; :mod:`.search`, one type's exact search), :mod:`.consistency` (models), :mod:`.explain`
(words), :mod:`.check` (the verdict).

The names below are loaded when first used: ``chaos check``'s command line imports
:mod:`.options` at start-up, and must not pay for networkx then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chaos.checkers.elle.check import (
        DATA_MODELS,
        DEFAULT_CONSISTENCY,
        check_file,
        check_transactions,
    )
    from chaos.checkers.elle.consistency import MODELS, NAMES, model
    from chaos.checkers.elle.loading import NoHistory
    from chaos.checkers.elle.options import VersionOrder
    from chaos.checkers.elle.txns import RawOp, Txn, TxnInputError, transactions

_WHERE = {
    "DATA_MODELS": "check",
    "DEFAULT_CONSISTENCY": "check",
    "check_file": "check",
    "check_transactions": "check",
    "MODELS": "consistency",
    "NAMES": "consistency",
    "model": "consistency",
    "NoHistory": "loading",
    "VersionOrder": "options",
    "RawOp": "txns",
    "Txn": "txns",
    "TxnInputError": "txns",
    "transactions": "txns",
}

__all__ = [
    "DATA_MODELS",
    "DEFAULT_CONSISTENCY",
    "MODELS",
    "NAMES",
    "NoHistory",
    "RawOp",
    "Txn",
    "TxnInputError",
    "VersionOrder",
    "check_file",
    "check_transactions",
    "model",
    "transactions",
]


def __getattr__(name: str) -> object:  # the names it loads are typed above
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value
