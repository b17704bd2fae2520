"""``python3 -m chaos.cli``: the `chaos` command."""

from chaos.cli.app import main

if __name__ == "__main__":  # pragma: no cover
    main()
