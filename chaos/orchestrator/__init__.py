"""One run from spec to verdict: set up, drive the schedule, heal, final reads, tear down, check, store."""
