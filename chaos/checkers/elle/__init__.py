"""Elle-style transactional checking (Kingsbury & Alvaro, VLDB 2020), on networkx.

A history of transactions (Jepsen's ``:txn`` ops or chaos's ``f: "txn"``) becomes a graph of
dependencies between transactions — inferred from list-append's traceable versions or from an
rw-register's recoverable ones, plus process and real-time order — whose cycles are Adya's
anomalies. :func:`check_file` / :func:`check_transactions` say which anomalies a consistency
model forbids were found, each cycle explained in words and kept as data.

Modules, one concept each: :mod:`.txns` (ops → transactions), :mod:`.loading` (files → ops),
:mod:`.list_append` and :mod:`.rw_register` (inference), :mod:`.graph` (edges, components),
:mod:`.cycles` (search and names; :mod:`.search`, one type's exact search), :mod:`.consistency`
(models), :mod:`.explain` (words),
:mod:`.check` (the verdict).
"""

from chaos.checkers.elle.check import (
    DATA_MODELS,
    DEFAULT_CONSISTENCY,
    check_file,
    check_transactions,
)
from chaos.checkers.elle.consistency import MODELS, NAMES, model
from chaos.checkers.elle.loading import NoHistory
from chaos.checkers.elle.txns import RawOp, Txn, TxnInputError, transactions

__all__ = [
    "DATA_MODELS",
    "DEFAULT_CONSISTENCY",
    "MODELS",
    "NAMES",
    "NoHistory",
    "RawOp",
    "Txn",
    "TxnInputError",
    "check_file",
    "check_transactions",
    "model",
    "transactions",
]
