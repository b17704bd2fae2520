"""The `chaos` command line: every command, and click, live in this package (one module a
command group; chaos.cli.app assembles them)."""

from chaos.cli.app import entry, main

__all__ = ["entry", "main"]
