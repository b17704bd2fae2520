"""Reusable systems deployed on a cluster: an etcd cluster, a NATS JetStream broker."""
