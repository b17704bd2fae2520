"""``packet-loss``: links that lose a fraction of their packets, verified by a probe that counts.

The spec is ``[P%:]target``, where the target is a node selector (``n1+n2``, ``one``,
``minority``...) or ``A>B`` (one way: what A's nodes send to B's nodes):

- several nodes (``n1+n2``): every link among them, both ways;
- a single node (``one``, ``n3``): every link between it and every other node, both ways;
- ``n1>n2``: only what n1 sends to n2 (n2's replies pass).

P defaults to 30%. The rules are iptables' statistic match (``-m statistic --mode random
--probability P -j DROP``, one draw per packet in the kernel) in the run's own chain in each
receiver's namespace, the chain partitions use; heal deletes exactly these rules, and the reaper's
``iptables-flush`` clears them after a crash. Each direction's loss is measured after applying (and
again after healing) by sending numbered UDP datagrams and counting those that arrive.

Delay and duplication need the kernel's ``sch_netem`` (``tc qdisc ... netem``); this machine's
kernel has none, so ``packet-loss:delay=...`` and ``duplicate`` are refused at start, saying so,
wherever ``tc`` answers "Specified qdisc kind is unknown".
"""

from __future__ import annotations

import itertools
import math
import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chaos.cluster import net
from chaos.cluster.base import Cluster, Reapable
from chaos.cluster.node_kit.undo import UndoOp
from chaos.core.context import RunContext
from chaos.core.target import Resolved
from chaos.core.workload import Workload
from chaos.nemesis.targets import pick_nodes

DEFAULT_PROBABILITY = 0.30
PORT_SPAN = 2000  # probe ports cycle through LOSS_PROBE_PORT .. + PORT_SPAN
_ports = itertools.count()
_ports_lock = threading.Lock()


def _next_port() -> int:
    with _ports_lock:
        return net.LOSS_PROBE_PORT + next(_ports) % PORT_SPAN


NETEM_WORDS = ("delay", "duplicate", "reorder", "corrupt", "jitter")


class LossError(RuntimeError):
    """A loss that cannot be applied, or a probe that does not see it."""


def parse(spec: str | None) -> tuple[float, str]:
    """``30%:n1+n2`` -> (0.3, "n1+n2"); ``n1>n2`` -> (0.3, "n1>n2"); None -> (0.3, "one")."""
    p, target = DEFAULT_PROBABILITY, spec or "one"
    head, _, rest = target.partition(":")
    word = head.partition("=")[0]
    if word in NETEM_WORDS:
        ok, why = net.netem_available()
        if not ok:
            raise LossError(
                f"packet-loss {word}: needs the kernel's sch_netem (tc qdisc ... netem), which "
                f"this kernel lacks ({why or 'no answer'}); only loss (iptables) works here"
            )
        raise LossError(f"packet-loss {word}: netem faults are not implemented yet")
    if head.endswith("%"):
        try:
            p = float(head[:-1]) / 100.0
        except ValueError:
            raise LossError(f"packet-loss {spec!r}: {head!r} is not a percentage") from None
        target = rest or "one"
    if not 0.0 < p <= 1.0:
        raise LossError(f"packet-loss {spec!r}: the loss must be above 0% and at most 100%")
    return p, target


def links(nodes: list[str], target: str, rng: random.Random) -> dict[str, list[str]]:
    """The lossy links ``{receiver: [senders]}`` a target names."""
    if ">" in target:
        a, _, b = target.partition(">")
        src, dst = pick_nodes(a, nodes, rng), pick_nodes(b, nodes, rng)
        out = {r: [s for s in src if s != r] for r in dst}
    else:
        chosen = pick_nodes(target, nodes, rng)
        if len(chosen) == 1:
            (c,) = chosen
            others = [n for n in nodes if n != c]
            out = {c: others, **{o: [c] for o in others}}
        else:
            out = {r: [s for s in chosen if s != r] for r in chosen}
    out = {r: sorted(s) for r, s in sorted(out.items()) if s}
    if not out:
        raise LossError(f"packet-loss {target}: names no link between two nodes")
    return out


def tolerance(p: float, packets: int) -> float:
    """How far a measured loss may stray from ``p`` by chance: five standard deviations of a
    binomial count, plus two points for datagrams lost to the probe itself."""
    return 5 * math.sqrt(p * (1 - p) / packets) + 0.02


class PacketLossFault:
    name = "packet-loss"

    def __init__(self, workload: Workload | None = None) -> None:
        self.workload = workload

    def resolve(self, ctx: RunContext, spec: str | None, rng: random.Random) -> Resolved:
        p, target = parse(spec)
        lk = links(sorted(ctx.cluster.nodes), target, rng)
        return Resolved(spec=spec or target, grudge=lk, params={"probability": p})

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        cluster = ctx.cluster
        lk = resolved.grudge
        p = float(resolved.params.get("probability", DEFAULT_PROBABILITY))
        chain = net.chain_name(cluster.run_id)
        pairs = [(s, r) for r, ss in lk.items() for s in ss]
        # partitions heal by flushing the chain when none is left: they must know a loss remains
        active: dict[int, dict[str, list[str]]] = ctx.state.setdefault("losses", {})
        key = id(pairs)
        probs: dict[int, float] = ctx.state.setdefault("loss-probabilities", {})

        def measure() -> dict[str, float] | None:
            if not isinstance(cluster, net.NsCommand):
                return None
            return _measure(cluster, pairs, lambda: _expected(ctx, pairs, active, probs))

        def take_back() -> None:
            active.pop(key, None)
            probs.pop(key, None)
            net.remove_loss(cluster, lk, p)

        def apply() -> list[dict[str, Any]]:
            active[key] = lk
            probs[key] = p
            try:
                rules = net.apply_loss(cluster, lk, p)
                measured = measure()
            except BaseException:
                # a loss that is not what was asked for is taken back at once, not at the end of
                # the run: it would make later faults' probes (a partition's) disagree
                take_back()
                raise
            return [
                {
                    "links": lk,
                    "probability": p,
                    "chain": chain,
                    "rules": rules,
                    "measured": measured,
                }
            ]

        def undo() -> dict[str, Any]:
            take_back()
            return {"links": lk, "probability": 0.0, "measured": measure()}

        # written down before any rule: a dead orchestrator's leftovers are flushed from this
        reap = {"reap": [_reap(cluster, chain)]}
        intent = intent or {"target": resolved.spec, "probability": p}
        return ctx.faults.start(
            "packet-loss", apply, undo, intent=intent, trigger=trigger, extra=reap
        )


def _reap(cluster: Cluster, chain: str) -> dict[str, Any]:
    """What the reaper needs to flush the run's chain after the orchestrator died."""
    handles = cluster if isinstance(cluster, Reapable) else None
    containers = [handles.reap_handle(n) for n in cluster.nodes] if handles else []
    return {"op": UndoOp.IPTABLES_FLUSH, "chain": chain, "containers": containers}


def _expected(
    ctx: RunContext,
    pairs: list[tuple[str, str]],
    active: dict[int, dict[str, list[str]]],
    probs: dict[int, float],
) -> dict[str, float]:
    """The loss each direction should show now: every lossy link in force on it (overlapping
    faults compound), or all of it when a partition cuts it."""
    cuts = ctx.state.get("partitions", {}).values()
    out = {}
    for s_, r in pairs:
        if any(s_ in g.get(r, []) for g in cuts):
            out[f"{s_}->{r}"] = 1.0
            continue
        keep = 1.0
        for k, links_k in list(active.items()):
            if s_ in links_k.get(r, []):
                keep *= 1.0 - probs.get(k, 0.0)
        out[f"{s_}->{r}"] = round(1.0 - keep, 4)
    return out


def _measure(
    cluster: net.NetCluster,
    pairs: list[tuple[str, str]],
    expected: Callable[[], dict[str, float]],
) -> dict[str, float] | None:
    """The loss each direction shows, probed; LossError when it is not ``expected()`` within the
    probe's tolerance, None when other faults kept changing it while probing."""
    for _ in range(3):
        # a port of its own per probe: probes of this fault and of overlapping ones may
        # land in one receiver's namespace at once
        jobs = [(s, r, _next_port()) for s, r in pairs]
        want = expected()
        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            got = list(pool.map(lambda j: net.probe_loss(cluster, j[0], j[1], port=j[2]), jobs))
        if expected() != want:
            continue  # another fault came or went while the probe ran: again
        out = {f"{g.src}->{g.dst}": round(g.loss, 3) for g in got}
        wrong = {
            k: v
            for k, v in out.items()
            if abs(v - want[k]) > tolerance(want[k], net.LOSS_PROBE_PACKETS)
        }
        if wrong:
            raise LossError(
                "loss probe: measured "
                + ", ".join(f"{k} {v:.1%} (wanted {want[k]:.0%})" for k, v in wrong.items())
            )
        return out
    return None
