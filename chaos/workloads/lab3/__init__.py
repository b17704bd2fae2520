"""lab3 — "the event will arrive twice": outbox, redelivery, one local effect (etcd + JetStream)."""
