"""The run's shared contract types: the test spec, the run context, the supervisor, the fault
ledger, targets, and the capabilities a workload may declare.

This layer sits below the nemesis and the workloads, so that both can speak of a run without
importing the orchestrator that drives it (or each other).
"""
