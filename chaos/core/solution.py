"""The name of a workload's correct built-in solution (``chaos.core.capabilities.Solutions``),
and so the solution a run takes when the command names none; and how much of a solution a run
copies (the grader refuses a submission over it before running it).

A module of its own so that the command line's ``--solution`` default comes from here, not from
``chaos.core.spec``, which the click layer must not import (its contract in pyproject.toml)."""

REFERENCE = "reference"

# a solution larger than this is refused (it is copied into every run), before anything is copied
MOUNT_CAP = 64 << 20
MOUNT_FILES = 2000
