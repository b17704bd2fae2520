"""Where the code under test may connect: its own node, and the lab's ports on its cluster.

The run's host chain (chaos.cluster.docker.firewall) keeps a node's traffic inside its run, and
the etcd guard (chaos.workloads.systems.etcd_proxy) keeps the services off etcd's ports. Between
the run's own nodes every other port was open: a service could reach whatever another node
listens on. This chain, in each node's own network namespace, leaves every process but root's
(the services run as uids of their own; etcd, the broker and the proxy run as root) only:

- its own node (loopback: the etcd proxy, Docker's resolver);
- replies on connections it accepted or opened (the api's answers to the client);
- TCP to the ports the workload names (lab3: the broker's 4222) on any member.

Everything else is refused at once (a TCP reset, else ICMP port-unreachable), UDP included. The
chain is the node's: it goes with the container, no heal flushes it (partitions use the run's
own chain), and it is installed before any service starts.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from chaos.cluster.base import Cluster
from chaos.workloads.systems import etcd_proxy

CHAIN = "CHAOS-EGRESS"
ROOT_UID = 0


class EgressError(RuntimeError):
    """The chain that confines the services' connections could not be installed."""


def script(ports: Sequence[int], tool: str = "iptables") -> str:
    """The shell commands that (re)build the chain and jump to it for every uid but root's.

    The chain is one ``-restore`` (its declaration empties a chain already there, and the kernel
    takes the whole of it at once, never half-built), the jump a check and an append: three
    processes where a command per rule took eight, on a bring-up that waits for them on a busy
    host."""
    allow = (
        [f"-A {CHAIN} -p tcp -m multiport --dports {','.join(map(str, ports))} -j RETURN"]
        if ports
        else []
    )
    table = "\n".join([
        "*filter",
        f":{CHAIN} - [0:0]",
        f"-A {CHAIN} -o lo -j RETURN",
        f"-A {CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN",
        *allow,
        f"-A {CHAIN} -p tcp -j REJECT --reject-with tcp-reset",
        f"-A {CHAIN} -j REJECT",
        "COMMIT",
        "",
    ])  # fmt: skip
    t = f"{tool} -w 5"
    jump = f"OUTPUT -m owner ! --uid-owner {ROOT_UID} -j {CHAIN}"
    return (
        f"printf '%s' {shlex.quote(table)} | {tool}-restore -w 5 --noflush && "
        f"{{ {t} -C {jump} 2>/dev/null || {t} -A {jump}; }}"
    )


def _one(cluster: Cluster, node: str, ports: Sequence[int]) -> None:
    v6 = script(ports, "ip6tables")
    sh = (
        f"{script(ports)} || exit 1; "
        f"{{ {v6}; }} 2>/dev/null "
        '|| [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)" = 1 ] || exit 2'
    )
    r = cluster.net_exec(node, ["sh", "-c", sh])
    if not r.ok:
        tool = "ip6tables" if r.exit_code == 2 else "iptables"
        raise EgressError(f"{node}: {tool}: the services' egress chain: {r.output.strip()}")


def install(cluster: Cluster, ports: Sequence[int] = ()) -> None:
    """Confine the connections of every process but root's in every node to the node itself and
    ``ports`` on the cluster (idempotent). Nothing on nodes chaos does not own (SSH)."""
    if not etcd_proxy.confined(cluster):
        return
    with ThreadPoolExecutor(max_workers=len(cluster.nodes) or 1) as pool:
        for f in [pool.submit(_one, cluster, n, tuple(ports)) for n in cluster.nodes]:
            f.result()
