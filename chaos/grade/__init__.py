"""Grading a class: every submission under a matrix of configurations, repeated, on Dask.

``chaos grade`` is the command; :func:`chaos.grade.session.grade` the whole job. Each module is
one concept: submissions (the class), matrix (the configurations), seeds, task (one run, the Dask
task), dispatch (Dask), ledger (what finished, for resume), stats (rates and intervals), report
(HTML, CSV, JSON). See docs/grading.md.
"""
