"""A fault point the code under test reaches and claims (``FaultPoints``, the in-process points).

The orchestrator arms the point by writing a file in the control folder (shared by every node, so
whichever process reaches the point first claims it). The claim is a request in the claimer's
own words, and the code under test can make one from anywhere in its process: so nothing about
the fault is taken from it. The orchestrator checks the claimer's pid against the process the
host runs there (a claim naming another pid, or a process that is not the point's component, is
refused), reads the state the point is reached in itself (the nemesis's ``observe``: etcd and the
broker), and only then answers, in a root-owned file, granting the arming to that pid. A crashing
point's process then waits at the point and the orchestrator kills it, by the pid the host knows,
and watches it exit and restart (chaos.nemesis.hostkill): the crash in the record is the host's.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from chaos.core.context import Claim, RunContext
from chaos.histories.ops import Event
from chaos.nemesis import hostkill

# a claim file exists a moment before its content is written: how long an unreadable one is
# given before it counts as a claim that does not say who made it
CLAIM_GRACE = 1.0
# how long a granted answer is kept for its claimer to read (its own wait for it is longer)
ANSWER_WAIT = 8.0


class ClaimedArming:
    """The :class:`~chaos.nemesis.faultpoint.Arming` of a point a process claims; ``crashes``:
    the host kills the claimer once granted (the point's declaration says so)."""

    where = "any node"

    def __init__(self, *, crashes: bool) -> None:
        self.crashes = crashes
        self.gen = secrets.token_hex(6)
        self.since = 0  # the events before the arming: a claimer's event comes after
        self.claim: Claim | None = None

    def arm(self, ctx: RunContext, point: str) -> None:
        self.since = len(ctx.events.snapshot())
        ctx.write_control(point, json.dumps({"armed_at": ctx.now(), "gen": self.gen}))

    def disarm(self, ctx: RunContext, point: str) -> None:
        ctx.remove_control(point)  # not fired yet: disarm
        ctx.remove_control(f"{point}.answer")

    def fired(
        self, ctx: RunContext, point: str, component: str, wait: float
    ) -> dict[str, Any] | None:
        claim = self._wait_claim(ctx, point, wait)
        ctx.remove_control(point)  # one-shot: whoever claimed it, no one else can
        if claim is None:
            return None
        self.claim = claim
        seen_at = round(ctx.now(), 3)
        # the claimer's own words, kept apart from what the host saw
        fired: dict[str, Any] = {
            "claim": {"node": claim.node, "component": claim.component, "pid": claim.pid}
        }
        refused = _refusal(ctx, claim, component)
        if refused:
            ctx.write_control(f"{point}.answer", json.dumps({"gen": self.gen, "granted": False}))
            self._await_taken(ctx, point)
            ctx.progress(f"{point}: claim refused: {refused}")
            return {**fired, "refused": refused, "claimed_at": seen_at}
        fired.update(
            {"node": claim.node, "process": claim.component, "pid": claim.pid, "fired_at": seen_at}
        )
        said = _said(ctx, point, claim, self.since)
        if said is not None and said.task_id:
            fired["task_id"] = said.task_id  # narration: the task the service said it was on
        return fired

    def act(self, ctx: RunContext, point: str, fired: dict[str, Any]) -> None:
        claim = self.claim
        assert claim is not None, "act() follows a granted firing"
        answer = json.dumps({"gen": self.gen, "granted": True, "pid": claim.pid})
        ctx.write_control(f"{point}.answer", answer, on=claim.node)
        ctx.progress(f"{point} reached on {claim.node} ({claim.component}, pid {claim.pid})")
        # the answer stays until the claimer took it (a busy node may take a while to look): a
        # grant removed unread would leave the point claimed and the fault never applied
        self._await_taken(ctx, point)
        if self.crashes:
            self._crash(ctx, point, claim, fired)

    def _crash(self, ctx: RunContext, point: str, claim: Claim, fired: dict[str, Any]) -> None:
        """Kill the claimer from the host and see it restarted, into ``fired``."""
        fired.update(hostkill.crash(ctx, claim.node, claim.component, claim.pid))
        if "exit_seen_at" in fired:
            ctx.progress(
                f"{point}: killed {claim.component} on {claim.node} (pid {claim.pid}), "
                f"restarted as pid {fired.get('restarted_pid')}"
            )

    def _await_taken(self, ctx: RunContext, point: str) -> None:
        deadline = time.monotonic() + ANSWER_WAIT
        while not ctx.answer_taken(point, self.gen) and time.monotonic() < deadline:
            if ctx.stop.wait(0.01):
                break

    def _wait_claim(self, ctx: RunContext, point: str, wait: float) -> Claim | None:
        """The claim of this arming, once made (None: no process reached the point in time)."""
        gen, since = self.gen, self.since
        deadline = time.monotonic() + wait
        first_seen: float | None = None
        while not ctx.stop.is_set() and time.monotonic() < deadline:
            if ctx.channel is not None:
                # nodes with copies: the backend's arbiter granted the arming to one claimer, who
                # names itself in its event (its pid is checked all the same)
                ev = _said(ctx, point, None, since)
                if ev is not None:
                    return Claim(node=ev.node, component=ev.component, pid=ev.pid or -1)
            else:
                got = ctx.claim(point, gen)
                if got is not None:
                    return got
                if ctx.claimed(point, gen):
                    first_seen = first_seen or time.monotonic()
                    if time.monotonic() - first_seen > CLAIM_GRACE:
                        # used up, but by no one the host can name
                        return Claim(node="?", component="?", pid=-1)
            time.sleep(0.01)
        return None


def _refusal(ctx: RunContext, claim: Claim, component: str) -> str | None:
    """Why the host will not act on this claim, or None: the claimer must be the point's
    component on a node of the run, running (as the host sees it) as the pid it names."""
    if claim.node not in ctx.cluster.nodes or claim.component != component:
        return f"the claim names {claim.component} on {claim.node}, not a {component} of this run"
    running = ctx.cluster.pid(claim.node, claim.component)
    if running != claim.pid:
        return (
            f"the claim names pid {claim.pid}, but the host's {claim.component} on "
            f"{claim.node} is {'not running' if running is None else f'pid {running}'}"
        )
    return None


def _said(ctx: RunContext, point: str, claim: Claim | None, since: int) -> Event | None:
    """The claimer's ``fault-point`` event for ``point`` (narration), if it wrote one."""
    ctx.events.poll()
    for e in reversed(ctx.events.snapshot()[since:]):
        if e.kind != "fault-point" or e.data.get("point") != point:
            continue
        if claim is None or (e.node, e.component, e.pid) == (
            claim.node,
            claim.component,
            claim.pid,
        ):
            return e
    return None
