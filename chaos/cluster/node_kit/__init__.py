"""What every backend shares, below all of them: the node's software, a run's owner, reading a
process table, the undo ops a reaper carries out, and the one reaper itself, written against a
:class:`~chaos.cluster.node_kit.transport.Transport` that each backend provides.

The backends (``chaos.cluster.docker``, ``chaos.cluster.ssh``) are siblings that never import each
other (an import-linter contract in ``pyproject.toml``); a fact both need lives here, once. Nothing
here talks to a Docker engine or to an SSH connection.
"""
