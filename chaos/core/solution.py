"""The name of a workload's correct built-in solution (``chaos.core.capabilities.Solutions``),
and so the solution a run takes when the command names none.

A module of its own so that the command line's ``--solution`` default comes from here, not from
``chaos.core.spec``, which the click layer must not import (its contract in pyproject.toml)."""

REFERENCE = "reference"
