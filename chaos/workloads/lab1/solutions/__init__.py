"""The lab1 solutions shipped with chaos: ``starter`` (TODOs), ``reference``, and buggy teaching
examples (``no-fencing``, ``check-lease-before-write``, ``acquire-without-cas``, ``off-by-one-night``,
``token-reuse``, ``renew-without-check``), each with the configuration that shows its bug in its
docstring and in docs/labs/lab1.md."""
