"""One NATS JetStream broker with a file store, on the first node."""

from __future__ import annotations

import socket
import time

from chaos.core.capabilities import OptionValues
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.supervisor import ProcessSpec

PORT = 4222
# The consumers' AckWait, an option of every workload with a JetStream consumer (declared once,
# here): how long the broker waits for an ACK before it delivers the message again
ACK_WAIT = WorkloadOption(
    "ack_wait",
    float,
    2.0,
    "JetStream AckWait of the consumer, seconds: an unACKed message is delivered again after it",
    low=0,
    above=True,
)


def ack_wait(values: OptionValues) -> float:
    """The run's AckWait, from its option values (chaos.core.capabilities.option_values)."""
    return float(values[ACK_WAIT.name])


def broker_node(ctx: RunContext) -> str:
    return ctx.cluster.nodes[0]


def url(ctx: RunContext) -> str:
    return f"nats://{ctx.cluster.address(broker_node(ctx))}:{PORT}"


def process(ctx: RunContext) -> ProcessSpec:
    node = broker_node(ctx)
    # the store directory lives in the container and survives a process kill, as the lab promises
    return ProcessSpec(
        node=node,
        name="nats",
        role="nats",
        infrastructure=True,
        argv=["nats-server", "-js", "-sd", "/data/nats", "-p", str(PORT), "-n", node],
    )


def deploy(ctx: RunContext, wait: float = 15.0) -> None:
    ctx.supervisor.start_process(process(ctx))
    host = ctx.cluster.address(broker_node(ctx))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, PORT), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nats-server on {broker_node(ctx)} did not listen within {wait}s")
