"""Nemeses: faults, their targets and schedules, and the heal that always runs."""
