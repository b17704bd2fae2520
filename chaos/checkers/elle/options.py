"""How an rw-register's version order may be inferred: Elle's options, declared once as data.

A register's versions are not ordered by what clients see (list-append's are: each read shows the
list's history). Beyond what the history proves (the initial ``nil`` precedes every version; from
read-committed up a transaction's write follows the version it read), Elle lets the user assume
more of the database, each assumption a source of version-order pairs:

- ``sequential_keys`` (Elle's ``:sequential-keys?``): each key is sequentially consistent, so a
  process's successive transactions on a key see or write non-decreasing versions;
- ``linearizable_keys`` (``:linearizable-keys?``): each key is linearizable, so a transaction
  that completed before another was invoked precedes it in the key's version order;
- ``wfr_keys`` (``:wfr-keys?``): within a transaction a write follows the version it read, under
  every model (chaos infers this anyway for models that forbid G1, where it is no assumption: the
  other order would be a G1c cycle);
- ``transaction_order`` (``:transaction-order``): the database's own commit order, a number per
  transaction (by its completion's ``:index``); each key's versions follow it.

All are off by default, as in Elle. This module imports the standard library only: ``chaos
check``'s command line (chaos.cli.model_check) declares its options from :data:`OPTIONS` at
start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["OPTIONS", "SOURCES", "VersionOption", "VersionOrder"]

# The sources of version-order pairs, in the order they are tried (Elle's ``version-graphs``): a
# source whose pairs would close a cycle in a key's versions is left out for that key.
SOURCES = (
    "initial-state",
    "transaction-order",
    "writes-follow-reads",
    "sequential-keys",
    "linearizable-keys",
)


@dataclass(frozen=True, slots=True)
class VersionOrder:
    """The version-order assumptions a check may use (none by default)."""

    sequential_keys: bool = False
    linearizable_keys: bool = False
    wfr_keys: bool = False
    # completion :index -> the database's commit order (ascending), or None
    transaction_order: Mapping[int, int] | None = None

    def named(self) -> list[str]:
        """The assumptions asked for, by their :data:`SOURCES` names."""
        return [
            name
            for name, on in (
                ("transaction-order", self.transaction_order is not None),
                ("writes-follow-reads", self.wfr_keys),
                ("sequential-keys", self.sequential_keys),
                ("linearizable-keys", self.linearizable_keys),
            )
            if on
        ]


@dataclass(frozen=True, slots=True)
class VersionOption:
    """One option of ``chaos check``: ``name`` is the click parameter (and the
    :class:`VersionOrder` field, but for ``version_order``, a file read into
    ``transaction_order``), ``flag`` its command-line form, ``elle`` Elle's option."""

    name: str
    flag: str
    elle: str
    help: str
    is_flag: bool = True


_RW = "With --model rw-register: "
OPTIONS: tuple[VersionOption, ...] = (
    VersionOption(
        "sequential_keys",
        "--sequential-keys",
        ":sequential-keys?",
        _RW + "assume each key is sequentially consistent: a process's successive transactions "
        "on a key see or write versions in the key's version order (Elle's :sequential-keys?).",
    ),
    VersionOption(
        "linearizable_keys",
        "--linearizable-keys",
        ":linearizable-keys?",
        _RW + "assume each key is linearizable: a transaction that completed before another "
        "was invoked comes first in the key's version order (Elle's :linearizable-keys?).",
    ),
    VersionOption(
        "wfr_keys",
        "--wfr-keys",
        ":wfr-keys?",
        _RW + "assume a transaction's write follows the version it read under every model "
        "(inferred anyway from read-committed up; Elle's :wfr-keys?).",
    ),
    VersionOption(
        "version_order",
        "--version-order",
        ":transaction-order",
        _RW + "the database's commit order, a JSON or EDN map from each transaction's "
        "completion :index to its position; each key's versions follow it (Elle's "
        ":transaction-order).",
        is_flag=False,
    ),
)
