"""The SSH backend: nodes are machines reached only over SSH (paramiko), Jepsen's way."""
