"""lab3's fault points (the seed's three scenarios) and the hold points its triggers arm."""

from __future__ import annotations

from chaos.core.capabilities import BrokerGroup, FaultPoint, HoldPoint
from chaos.workloads.lab3 import keys

FAULT_POINTS: dict[str, FaultPoint] = {
    "relay-crash-before-publish": FaultPoint(
        "relay", crashes=True, help="the relay crashes with the outbox entry claimed, unpublished"
    ),
    "lost-publish-ack": FaultPoint(
        "relay", crashes=False, help="JetStream stores the publish, the relay never sees its ACK"
    ),
    "worker-crash-before-ack": FaultPoint(
        "worker", crashes=True, help="the worker commits, then crashes before its ACK"
    ),
    "lost-create-response": FaultPoint(
        "api",
        crashes=False,
        help="the api commits a create and answers; chaos's own client drops the answer and "
        "retries the same task_id on another node (decided by the client, not the api)",
    ),
    "txn-error-complete": FaultPoint(
        "worker",
        crashes=False,
        help="the next transaction of a worker's complete fails with an etcd connection error, "
        "nothing committed: the delivery must not be ACKed as done (fired by the node's etcd "
        "proxy)",
    ),
    "txn-error-create": FaultPoint(
        "api",
        crashes=False,
        help="the next transaction of the api's create fails with an etcd connection error "
        "(fired by the node's etcd proxy)",
    ),
}

# the points the nodes' etcd proxies fire (HostFaultPoints), by the keys whose transaction they
# fail: only complete writes a dedup record, a result or the counter; only create an
# idempotency record
HOST_POINTS: dict[str, list[str]] = {
    "txn-error-complete": [keys.DEDUP_PREFIX, keys.RESULTS_PREFIX, keys.COUNTER],
    "txn-error-create": [keys.PREFIX + "idem/"],
    # dropped by the orchestrator's own client (chaos.workloads.lab3.lost_answer): no keys
    "lost-create-response": [],
}
LOST_CREATE = "lost-create-response"

# the seed's three scenarios (``--scenarios all``); the other points are faults to aim
SCENARIOS = ("relay-crash-before-publish", "lost-publish-ack", "worker-crash-before-ack")

_COMMIT = HoldPoint(
    "worker",
    "commit",
    "lab3 worker: after the delivery and any check the solution makes, right before its commit "
    "transaction",
)
_DELIVERY = HoldPoint(
    "worker", "delivery", "lab3 worker: right after the delivery, before the solution runs"
)
_PUBLISH = HoldPoint(
    "relay", "publish", "lab3 relay: outbox entry claimed, right before the publish to JetStream"
)

# (role, moment, event kind) -> the hold point a trigger phrase arms. "on delivery" means "having
# taken the delivery, before acting on it": the commit hold, which sits after any dedup check a
# solution makes, so a check-then-act bug is caught every time.
# every event kind lab3's processes report (a trigger's ``until`` names one)
EVENT_KINDS = (
    "start",
    "task-accepted",
    "publish",
    "publish-retry",
    "publish-ack-lost",
    "marked-published",
    "delivery",
    "compute",
    "commit",
    "suppressed",
    "ack",
    "ack-failed",
    "txn",
    "fault-point",
    "crash",
    "protocol-error",
    "relay-error",
    "worker-error",
)

HOLD_POINTS: dict[tuple[str, str, str], HoldPoint] = {
    ("worker", "on", "delivery"): _COMMIT,
    ("worker", "before", "commit"): _COMMIT,
    ("worker", "after", "delivery"): _DELIVERY,
    ("relay", "before", "publish"): _PUBLISH,
    ("relay", "on", "publish"): _PUBLISH,
}

# the broker steps the nodes' NATS proxies can hold for a trigger (``pause relay before publish
# of tasks``, ``kill worker after ack of tasks``, ``pause worker after delivery of tasks``), with
# no sign to the code under test: the relay's publishes of a task, and the worker consumer's
# deliveries and their ACKs (chaos.node.nats_proxy)
BROKER_GROUPS: dict[str, BrokerGroup] = {
    "tasks": BrokerGroup(
        publish=(keys.SUBJECT,), acks=(f"$JS.ACK.{keys.STREAM}.{keys.CONSUMER}.",)
    ),
}
# the services whose connections to the broker a held frame is traced to
BROKER_COMPONENTS = ("api", "relay", "worker")
