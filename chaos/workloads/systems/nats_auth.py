"""Who may do what on the broker: chaos's own user, and the lab services' narrow one.

A lab's evidence about the broker (its stream, its consumer, their counts) is only chaos's if the
code under test cannot reconfigure them. So chaos creates the stream and the durable consumer
itself, as a user of its own whose password is drawn per run and written only into the broker's
root-only configuration; the services get a second user that may publish the lab's subject, pull
from and ACK its one consumer, read that consumer's and stream's info (nats-py's
``pull_subscribe`` asks for the consumer's) and receive replies on ``_INBOX.>`` — nothing else.
Every other ``$JS.API`` subject (creating, updating or deleting a stream or a consumer, purging,
deleting or reading messages) is denied by nats-server before it reaches JetStream.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

ADMIN = "chaos"
SERVICE = "lab"


def _password() -> str:
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerAuth:
    """The two users of one run's broker, and the one stream and consumer the services use."""

    stream: str
    consumer: str
    subject: str
    admin_password: str = field(default_factory=_password, repr=False)
    service_password: str = field(default_factory=_password, repr=False)

    def service_publish(self) -> list[str]:
        """What the services may publish: the lab's subject and their consumer's API."""
        s, c = self.stream, self.consumer
        return [
            self.subject,
            f"$JS.API.CONSUMER.MSG.NEXT.{s}.{c}",  # fetch
            f"$JS.ACK.{s}.{c}.>",  # ack, nak, in-progress, term: of this consumer's deliveries
            f"$JS.API.CONSUMER.INFO.{s}.{c}",  # read-only
            f"$JS.API.STREAM.INFO.{s}",  # read-only
            "$JS.API.INFO",  # read-only: the account's limits
        ]

    def config(self) -> str:
        """nats-server's ``authorization`` block (JSON is a valid form of its config syntax)."""
        users = [
            {"user": ADMIN, "password": self.admin_password},
            {
                "user": SERVICE,
                "password": self.service_password,
                "permissions": {
                    "publish": {"allow": self.service_publish()},
                    "subscribe": {"allow": ["_INBOX.>"]},
                },
            },
        ]
        return "authorization " + json.dumps({"users": users}, indent=2) + "\n"

    def url(self, host: str, port: int, *, admin: bool) -> str:
        user, password = (ADMIN, self.admin_password) if admin else (SERVICE, self.service_password)
        return f"nats://{user}:{password}@{host}:{port}"
