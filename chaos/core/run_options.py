"""The table of ``chaos run``'s and ``chaos explore``'s run options: the run parameters the test
spec declares (chaos.core.spec.TestSpec's fields) and the options the backends declare
(chaos.cluster.backends). Each is declared once, as a chaos.run_option.RunOption; the commands'
options, the requests, the stored spec and the grade matrix are made from this table.

The click layer reads the declarations here: it never builds a spec (its contract in
pyproject.toml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaos.cluster import backends
from chaos.core.spec import SPEC_OPTIONS
from chaos.run_option import RunOption, for_command, values

__all__ = ["backend_options", "backend_values", "spec_options", "spec_values", "table"]


def spec_options(command: str) -> tuple[RunOption, ...]:
    """The run parameters ``command`` takes, in the order its help shows them."""
    return for_command(SPEC_OPTIONS, command)


def backend_options(command: str) -> tuple[RunOption, ...]:
    """The backends' options ``command`` takes."""
    return for_command(backends.options(), command)


def table() -> tuple[RunOption, ...]:
    """Every declared run option: the spec's, then the backends'."""
    return SPEC_OPTIONS + backends.options()


def spec_values(command: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The run parameters among ``command``'s parsed parameters, by name."""
    return values(spec_options(command), params)


def backend_values(command: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The backends' options among ``command``'s parsed parameters, by name."""
    return values(backend_options(command), params)
