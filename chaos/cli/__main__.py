"""``python3 -m chaos.cli``: the `chaos` command."""

from chaos.cli.app import entry

if __name__ == "__main__":  # pragma: no cover
    entry()
