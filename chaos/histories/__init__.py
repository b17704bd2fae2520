"""Histories: op and event records, the append-only JSONL store and its readers."""
