"""Whether a lab3 fault point's firing is confirmed by what the host observed.

A fault point is claimed by a process of the code under test, which may claim it anywhere and at
any time (a thread of a hostile solution can). So a scenario counts only on the host's facts:

- a crash: the orchestrator's own SIGKILL of the process the host runs there, its exit seen in
  the host's ``/proc``, and its restart (chaos.nemesis.hostkill);
- the scenario's precondition in the state the orchestrator read itself when the point was
  claimed (etcd's keys and the broker's stream and consumer, ``Lab3.observe``): a crash claimed
  where the scenario's state does not hold tests nothing, whatever the service says;
- what followed, by the broker's own counts (a redelivery) at the final reads.

Pure functions of a heal value (what the nemesis recorded) and the final state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def host_crash(fired: dict[str, Any]) -> tuple[bool, str]:
    """Whether the host killed the claimer, saw it exit and restarted it, in words."""
    who = f"{fired.get('process')} on {fired.get('node')}"
    killed, restarted = fired.get("killed_pid"), fired.get("restarted_pid")
    if fired.get("exit_seen_at") is None or killed is None:
        why = fired.get("error") or "it never sent its signal"
        return False, f"the host did not observe {who} exit after its own SIGKILL ({why})"
    if restarted is None:
        return False, (
            f"the host killed {who} (pid {killed}) and saw it exit, but never saw it restarted"
        )
    return True, (
        f"the host SIGKILLed {who} (pid {killed}, by its own process table), saw it exit at "
        f"{fired['exit_seen_at']} s and restarted it (pid {restarted})"
    )


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _messages(at_fire: dict[str, Any]) -> dict[int, str]:
    raw = at_fire.get("messages")
    out: dict[int, str] = {}
    for k, v in (raw if isinstance(raw, dict) else {}).items():
        if str(k).isdigit() and isinstance(v, dict):
            out[int(k)] = str(v.get("task_id"))
    return out


def _unacked(floor: int, delivered: int, pending: int) -> tuple[set[int], bool]:
    """The stream sequences the consumer had delivered and not ACKed, as far as its counts tell,
    and whether exactly: the one after the ack floor never is ACKed (that is what the floor
    means); with one pending, it is the only one; with as many pending as delivered past the
    floor, all are; otherwise some of those past the floor are."""
    if pending <= 0 or delivered <= floor:
        return set(), True
    if pending == 1:
        return {floor + 1}, True
    return set(range(floor + 1, delivered + 1)), pending == delivered - floor


def _at_fire(fired: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    raw = fired.get("at_fire")
    if not isinstance(raw, dict):
        return None, "the host read no state when the point was claimed"
    if raw.get("error"):
        return (
            None,
            f"the host could not read the state when the point was claimed ({raw['error']})",
        )
    return raw, ""


def split_delivery(fired: dict[str, Any]) -> tuple[str | None, str]:
    """worker-crash-before-ack's precondition, as the host read it when the point was claimed: a
    delivery with exactly one of its two steps done — the task's commit in etcd and its message
    delivered but not ACKed by the broker's consumer (commit before ACK), or its message ACKed and
    its commit absent (ACK before commit). Returns which (``"commit-first"``, ``"ack-first"``,
    None: neither was observed) and the words."""
    at, why = _at_fire(fired)
    if at is None:
        return None, why
    consumer = _dict(at.get("consumer"))
    floor = _int(consumer.get("ack_floor_stream_seq"))
    delivered = _int(consumer.get("delivered_stream_seq"))
    pending = _int(consumer.get("num_ack_pending"))
    committed = {str(t) for t in at.get("committed_tasks") or []}
    msgs = _messages(at)
    seqs, exact = _unacked(floor, delivered, pending)
    unacked = sorted({t for s, t in msgs.items() if s in seqs and t in committed})
    unapplied = sorted({t for s, t in msgs.items() if s <= floor and t not in committed})
    state = (
        f"the broker's consumer had ACKed up to stream message {floor} of {delivered} delivered, "
        f"{pending} awaiting ACK; etcd held the commit of {len(committed)} task(s)"
    )
    if unacked:
        which = (
            f"task {unacked[0]}"
            if exact and len(unacked) == 1
            else (f"one of task {', '.join(unacked)} (the consumer's counts cannot tell which)")
        )
        return "commit-first", f"when it was claimed, {state}: {which} committed and not ACKed"
    if unapplied:
        return "ack-first", (
            f"when it was claimed, {state}: task {', '.join(unapplied)} ACKed and not committed"
        )
    return None, (
        f"when it was claimed, {state}: no delivery was between its commit and its ACK, so the "
        "host did not observe the scenario's precondition"
    )


def still_uncommitted(fired: dict[str, Any], final: Mapping[str, Any]) -> tuple[bool, str]:
    """After an ACK-first split: whether a task ACKed and not committed at the kill never
    completed, by etcd's final state — so the process killed was the one holding it (if another
    held it, that one committed it)."""
    at, _ = _at_fire(fired)
    committed = {str(t) for t in (at or {}).get("committed_tasks") or []}
    consumer = _dict((at or {}).get("consumer"))
    floor = _int(consumer.get("ack_floor_stream_seq"))
    split = sorted({t for s, t in _messages(at or {}).items() if s <= floor and t not in committed})
    tasks = _dict(final.get("tasks"))
    lost = [t for t in split if tasks.get(t) != "completed"]
    if lost:
        return True, f"task {', '.join(lost)} never completed after the kill"
    return False, (
        f"task {', '.join(split)} completed after the kill: another process held it, so the "
        "host did not observe the killed process between its ACK and its commit"
    )


def unpublished_intent(fired: dict[str, Any]) -> tuple[bool, str]:
    """relay-crash-before-publish's precondition: etcd held a pending outbox entry whose event
    the broker's stream did not hold, when the point was claimed."""
    at, why = _at_fire(fired)
    if at is None:
        return False, why
    pending = {str(e) for e in at.get("pending_event_ids") or []}
    raw = at.get("messages")
    in_stream = {
        str(v.get("event_id")) for v in (raw if isinstance(raw, dict) else {}).values()
        if isinstance(v, dict)
    }  # fmt: skip
    missing = sorted(pending - in_stream)
    said = (
        f"etcd held {len(pending)} pending outbox entr(ies), {len(missing)} of them not in the "
        "broker's stream, when it was claimed"
    )
    if not missing:
        return False, said + ": the host did not observe an unpublished intent"
    return True, said


def redelivered(final: Mapping[str, Any]) -> tuple[bool, int, int]:
    """Whether the broker made more deliveries than it has messages delivered (its own counts)."""
    consumer = final.get("consumer") or {}
    made = _int(consumer.get("delivered_consumer_seq"))
    messages = _int(consumer.get("delivered_stream_seq"))
    return made > messages, made, messages


def _copies(raw: Any) -> dict[tuple[str, str, str], list[int]]:
    """The stream's messages by what they carry (event id, task id, amount): the sequences of
    each, as chaos read them from the broker."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for k, v in (raw if isinstance(raw, dict) else {}).items():
        if str(k).isdigit() and isinstance(v, dict):
            body = (str(v.get("event_id")), str(v.get("task_id")), str(v.get("amount")))
            out.setdefault(body, []).append(int(k))
    return out


def republished(fired: dict[str, Any], final: Mapping[str, Any]) -> tuple[bool, str]:
    """lost-publish-ack, by what chaos read from etcd and the broker itself: an event whose
    outbox entry was pending when the point was claimed is in the stream at least twice — the
    same event id, task and amount — one copy stored after the claim, and the consumer delivered
    every copy. Whoever published the copies, the workers were handed the same event twice:
    that is what the scenario tests. A message count any client can raise (a junk publish) is
    not looked at."""
    at, why = _at_fire(fired)
    if at is None:
        return False, why
    pending = {str(e) for e in at.get("pending_event_ids") or []}
    since = _int(_dict(at.get("stream")).get("last_seq"))
    delivered = _int(_dict(final.get("consumer")).get("delivered_stream_seq"))
    if not isinstance(final.get("messages"), dict):
        return False, "chaos did not read the stream's messages at the end"
    for (event, task, _), seqs in sorted(_copies(final["messages"]).items()):
        if event in pending and len(seqs) > 1 and max(seqs) > since:
            if delivered < max(seqs):
                return False, (
                    f"event {event} of task {task} is in the stream {len(seqs)} times (messages "
                    f"{', '.join(map(str, sorted(seqs)))}), but the consumer delivered only up "
                    f"to message {delivered}"
                )
            return True, (
                f"event {event} of task {task}, pending in etcd's outbox when the point was "
                f"claimed (the stream then ended at message {since}), is in the stream "
                f"{len(seqs)} times (messages {', '.join(map(str, sorted(seqs)))}), each "
                "delivered by the consumer"
            )
    return False, (
        f"no event pending in etcd's outbox when the point was claimed ({len(pending)}) is in "
        f"the broker's stream twice after message {since} (chaos read its last "
        f"{len(final['messages'])} messages): the host did not observe a republished event"
    )
