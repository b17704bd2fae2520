"""Clusters: named nodes reached through one backend (Docker now; SSH for real machines)."""
