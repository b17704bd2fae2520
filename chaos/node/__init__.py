"""Code that runs on the nodes (inside containers): the common runtime of the lab services.

Nothing here may import from the orchestrator side (docker, click, matplotlib): the node image has
only the standard library, ``etcd3`` and ``nats``.
"""
