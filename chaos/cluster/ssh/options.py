"""The SSH backend's options, declared once (chaos.run_option): the command line, the requests,
the command a run stores and the grade matrix are made from these. A module of its own, without
paramiko, so that ``chaos --help`` names them without loading the backend."""

from __future__ import annotations

from pathlib import Path

import click

from chaos.run_option import RunOption

NODES_FILE = RunOption(
    name="nodes_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="A nodes.yaml naming the machines of --backend ssh (see docs/backends.md).",
    metavar="FILE",
    commands=frozenset({"run", "explore", "cleanup"}),
    matrix="the grade's concurrent runs cannot share one nodes file's machines",
)

OPTIONS: tuple[RunOption, ...] = (NODES_FILE,)
