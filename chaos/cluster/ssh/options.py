"""The SSH backend's options, declared once (chaos.run_option): the command line, the requests,
the command a run stores and the grade matrix are made from these. A module of its own, without
paramiko, so that ``chaos --help`` names them without loading the backend."""

from __future__ import annotations

from chaos import run_option as option

NODES_FILE = option.RunOption(
    name="nodes_file",
    type=option.PathOf(dir_okay=False, exists=True),
    default=None,
    help="A nodes.yaml naming the machines of --backend ssh (see docs/backends.md).",
    metavar="FILE",
    commands=frozenset({"run", "explore", "cleanup"}),
    matrix="the grade's concurrent runs cannot share one nodes file's machines",
)

OPTIONS: tuple[option.RunOption, ...] = (NODES_FILE,)
