"""lab1 — single runner: a ShedLock-style lease in etcd, fencing tokens, the paused-holder test."""
