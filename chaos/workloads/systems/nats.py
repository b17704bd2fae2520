"""One NATS JetStream broker with a file store, on the first node.

With a :class:`~chaos.workloads.systems.nats_auth.BrokerAuth` the broker has two users: chaos's
own (``url``: every right) and the services' (``service_url``: the lab's subject and consumer
only); its configuration lives in a root-only folder of the broker's node."""

from __future__ import annotations

import socket
import time

from chaos.core.capabilities import OptionValues
from chaos.core.context import RunContext
from chaos.core.options import WorkloadOption
from chaos.core.supervisor import ProcessSpec
from chaos.workloads.systems.nats_auth import BrokerAuth

PORT = 4222
# root's, 0700: the services never read chaos's password (the folder is made before they start)
CONFIG_DIR = "/data/nats-auth"
CONFIG = f"{CONFIG_DIR}/nats.conf"
_AUTH = "nats_auth"  # in the run's context state: the run's BrokerAuth, when it has one
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


def auth(ctx: RunContext) -> BrokerAuth | None:
    found = ctx.state.get(_AUTH)
    return found if isinstance(found, BrokerAuth) else None


def url(ctx: RunContext) -> str:
    """chaos's own URL: with the run's admin user when the broker has users."""
    host = ctx.cluster.address(broker_node(ctx))
    a = auth(ctx)
    return a.url(host, PORT, admin=True) if a else f"nats://{host}:{PORT}"


def service_url(ctx: RunContext) -> str:
    """The services' URL: their own narrow user when the broker has users."""
    host = ctx.cluster.address(broker_node(ctx))
    a = auth(ctx)
    return a.url(host, PORT, admin=False) if a else f"nats://{host}:{PORT}"


def process(ctx: RunContext) -> ProcessSpec:
    node = broker_node(ctx)
    config = ["-c", CONFIG] if auth(ctx) else []
    # the store directory lives in the container and survives a process kill, as the lab promises
    return ProcessSpec(
        node=node,
        name="nats",
        role="nats",
        infrastructure=True,
        argv=["nats-server", "-js", "-sd", "/data/nats", "-p", str(PORT), "-n", node, *config],
    )


def _write_config(ctx: RunContext, a: BrokerAuth) -> None:
    """The configuration, written by the node's root into a 0700 folder of its own. Through a
    shell's argument, not the engine's archive API, which does not reach the node's tmpfs
    ``/data``; no service runs yet to read that argument."""
    node = broker_node(ctx)
    script = 'umask 077 && mkdir -p "$1" && chmod 700 "$1" && printf %s "$2" > "$1/nats.conf"'
    made = ctx.cluster.exec(node, ["sh", "-c", script, "sh", CONFIG_DIR, a.config()])
    if not made.ok:
        raise RuntimeError(f"{node}: writing {CONFIG}: {made.output.strip()}")


def deploy(ctx: RunContext, wait: float = 15.0, *, users: BrokerAuth | None = None) -> None:
    """Start the broker; ``users``: give it chaos's user and the services' narrow one (before
    any service starts: the configuration's folder is root's)."""
    if users is not None:
        ctx.state[_AUTH] = users
        _write_config(ctx, users)
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
