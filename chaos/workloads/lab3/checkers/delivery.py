"""``delivery-stats``: the delivery figures the lab report asks for. Always valid: it judges
nothing, it counts."""

from __future__ import annotations

from collections import Counter

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.workloads.lab3.checkers.chains import label
from chaos.workloads.lab3.model import Lab3Run


def delivery_stats(run: Lab3Run) -> CheckResult:
    """The delivery figures the lab report asks for, from the broker's own counts (JetStream's
    stream state and consumer info at the final reads). The services' events are narration,
    kept beside them as ``reported_*``: a solution can write any event it likes."""
    kinds = Counter(label(e) for e in run.events)
    final = run.final or {}
    consumer = final.get("consumer") or {}
    raw_made, raw_firsts = (
        consumer.get("delivered_consumer_seq"),
        consumer.get("delivered_stream_seq"),
    )
    counted = isinstance(raw_made, int) and isinstance(raw_firsts, int)
    made = raw_made if isinstance(raw_made, int) else 0
    firsts = raw_firsts if isinstance(raw_firsts, int) else 0
    stats = {
        "stream_messages": (final.get("stream") or {}).get("messages"),
        "consumer_num_redelivered": consumer.get("num_redelivered"),
        # beyond the stream sequence it reached, every delivery the consumer made is a redelivery
        "deliveries": made if counted else None,
        "redeliveries": made - firsts if counted else None,
        "reported_deliveries": kinds.get("delivery", 0) + kinds.get("redelivery", 0),
        "reported_redeliveries": kinds.get("redelivery", 0),
        "publishes": kinds.get("publish", 0) + kinds.get("publish-retry", 0),
        "publish_retries": kinds.get("publish-retry", 0),
        "publish_acks_lost": kinds.get("publish-ack-lost", 0),
        "commits": kinds.get("commit", 0),
        "suppressed": kinds.get("suppressed", 0),
        "acks": kinds.get("ack", 0),
        "protocol_errors": kinds.get("protocol-error", 0),
    }
    errors = [e for e in run.events if e.kind == "protocol-error"]
    broker = (
        f"the broker: {stats['stream_messages']} message(s), {made} deliveries "
        f"({stats['redeliveries']} redeliveries)"
        if counted
        else f"the broker's counts were not read ({final.get('broker_error') or run.no_final()})"
    )
    summary = (
        f"{broker}; the services reported {stats['publishes']} publishes "
        f"({stats['publish_retries']} retries), {stats['reported_deliveries']} deliveries, "
        f"{stats['commits']} commits, {stats['suppressed']} suppressed"
    )
    if errors:
        summary += f"; {len(errors)} protocol errors, first: {errors[0].data.get('error')}"
    return CheckResult(
        checker="delivery-stats",
        verdict=Verdict.VALID,
        summary=summary,
        stats=stats,
        anomalies=[{"protocol_error": e.to_json()} for e in errors[:20]],
    )
