"""The `chaos` command line: every command, and click, live in this package (one module a
command group; chaos.cli.app assembles them)."""

from chaos.cli.app import main

__all__ = ["main"]
