"""``chaos sandbox``: local sshd containers standing in for machines, for the SSH backend to reach.

Not a backend: it uses the Docker engine (``chaos.cluster.docker``) to make machines, and the SSH
backend (``chaos.cluster.ssh``), which never imports Docker, reaches them only over SSH.
"""
