"""Workloads: each is a system to deploy, a client that drives it, and the checkers that judge it."""
