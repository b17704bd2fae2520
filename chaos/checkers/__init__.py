"""Checkers: pure functions of a stored run (history, events, final state) to a verdict."""
