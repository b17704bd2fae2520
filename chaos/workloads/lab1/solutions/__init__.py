"""The lab1 solutions shipped with chaos: ``starter`` (TODOs), ``reference`` and two buggy examples."""
