"""Lab fault points: a one-shot fault at an exact place of the service's protocol.

The orchestrator arms the point by writing a file in the control folder (shared by every node, so
whichever process reaches the point first claims it). The claim is a request in the claimer's
own words, and the code under test can make one from anywhere in its process: so nothing about
the fault is taken from it. The orchestrator checks the claimer's pid against the process the
host runs there (a claim naming another pid, or a process that is not the point's component, is
refused), reads the state the point is reached in itself (``observe``: etcd and the broker), and
only then answers, in a root-owned file, granting the arming to that pid. A crashing point's
process then waits at the point and the orchestrator kills it, by the pid the host knows, and
watches it exit and restart (chaos.nemesis.hostkill): the crash in the record is the host's.
Whether the state at fire shows the scenario's precondition is the checkers' to judge.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from chaos.core.context import Claim, RunContext
from chaos.nemesis import hostkill

# a claim file exists a moment before its content is written: how long an unreadable one is
# given before it counts as a claim that does not say who made it
CLAIM_GRACE = 1.0
# how long a granted answer is kept for its claimer to read (its own wait for it is longer)
ANSWER_WAIT = 8.0


class FaultPointNemesis:
    def __init__(
        self,
        point: str,
        *,
        component: str,
        crashes: bool,
        wait: float = 30.0,
        observe: Callable[[RunContext], dict[str, Any]] | None = None,
    ) -> None:
        self.observe = observe
        self.name = point
        self.point = point
        self.component = component
        self.crashes = crashes
        self.wait = wait
        self.armed = threading.Event()  # ArmsFirst: the client starts once the point is armed

    def run(self, ctx: RunContext) -> None:
        try:
            self._run(ctx)
        finally:
            self.armed.set()  # never keep the client waiting on a nemesis that failed

    def _run(self, ctx: RunContext) -> None:
        fired: dict[str, Any] = {}
        gen = secrets.token_hex(6)
        answer = f"{self.point}.answer"

        def apply() -> list[dict[str, Any]]:
            ctx.write_control(self.point, json.dumps({"armed_at": ctx.now(), "gen": gen}))
            return [{"point": self.point, "component": self.component, "armed": "any node"}]

        def undo() -> dict[str, Any]:
            ctx.remove_control(self.point)  # not fired yet: disarm
            ctx.remove_control(answer)
            return {"point": self.point, **fired}

        fid = ctx.faults.start(self.point, apply, undo, intent={"point": self.point})
        self.armed.set()
        ctx.progress(f"armed fault point {self.point}")
        since = len(ctx.events.snapshot())
        claim = self._wait_claim(ctx, gen, since)
        ctx.remove_control(self.point)  # one-shot: whoever claimed it, no one else can
        if claim is None:
            ctx.progress(f"fault point {self.point} never fired")
            ctx.faults.heal(fid)
            return
        seen_at = round(ctx.now(), 3)
        # the claimer's own words, kept apart from what the host saw
        fired["claim"] = {"node": claim.node, "component": claim.component, "pid": claim.pid}
        refused = self._refusal(ctx, claim)
        if refused:
            fired["refused"] = refused
            fired["claimed_at"] = seen_at
            ctx.write_control(answer, json.dumps({"gen": gen, "granted": False}))
            self._await_taken(ctx, gen)
            ctx.progress(f"{self.point}: claim refused: {refused}")
            ctx.faults.heal(fid)
            return
        fired.update(
            {"node": claim.node, "process": claim.component, "pid": claim.pid, "fired_at": seen_at}
        )
        said = _said(ctx, self.point, claim, since)
        if said is not None and said.task_id:
            fired["task_id"] = said.task_id  # narration: the task the service said it was on
        self._observe(ctx, fired)
        ctx.write_control(
            answer, json.dumps({"gen": gen, "granted": True, "pid": claim.pid}), on=claim.node
        )
        ctx.progress(f"{self.point} reached on {claim.node} ({claim.component}, pid {claim.pid})")
        # the answer stays until the claimer took it (a busy node may take a while to look): a
        # grant removed unread would leave the point claimed and the fault never applied
        self._await_taken(ctx, gen)
        if self.crashes:
            self._crash(ctx, claim, fired)
        ctx.faults.heal(fid)

    def _observe(self, ctx: RunContext, fired: dict[str, Any]) -> None:
        """The state the point was reached in, read by the orchestrator before the fault acts
        (the process waits for its answer meanwhile), into ``fired``."""
        if self.observe is None:
            return
        try:
            fired["at_fire"] = self.observe(ctx)
        except Exception as e:
            fired["at_fire"] = {"error": f"{type(e).__name__}: {e}"}
        # how long the reading took: a commit-first split read later than AckWait after the
        # claim may already be redelivered and ACKed elsewhere (then unknown, never valid)
        fired["observed_at"] = round(ctx.now(), 3)

    def _crash(self, ctx: RunContext, claim: Claim, fired: dict[str, Any]) -> None:
        """Kill the claimer from the host and see it restarted, into ``fired``."""
        fired.update(hostkill.crash(ctx, claim.node, claim.component, claim.pid))
        if "exit_seen_at" in fired:
            ctx.progress(
                f"{self.point}: killed {claim.component} on {claim.node} (pid {claim.pid}), "
                f"restarted as pid {fired.get('restarted_pid')}"
            )

    def _await_taken(self, ctx: RunContext, gen: str) -> None:
        deadline = time.monotonic() + ANSWER_WAIT
        while not ctx.answer_taken(self.point, gen) and time.monotonic() < deadline:
            if ctx.stop.wait(0.01):
                break

    def _wait_claim(self, ctx: RunContext, gen: str, since: int) -> Claim | None:
        """The claim of this arming, once made (None: no process reached the point in time)."""
        deadline = time.monotonic() + self.wait
        first_seen: float | None = None
        while not ctx.stop.is_set() and time.monotonic() < deadline:
            if ctx.channel is not None:
                # nodes with copies: the backend's arbiter granted the arming to one claimer, who
                # names itself in its event (its pid is checked all the same)
                ev = _said(ctx, self.point, None, since)
                if ev is not None:
                    return Claim(node=ev.node, component=ev.component, pid=ev.pid or -1)
            else:
                got = ctx.claim(self.point, gen)
                if got is not None:
                    return got
                if ctx.claimed(self.point, gen):
                    first_seen = first_seen or time.monotonic()
                    if time.monotonic() - first_seen > CLAIM_GRACE:
                        # used up, but by no one the host can name
                        return Claim(node="?", component="?", pid=-1)
            time.sleep(0.01)
        return None

    def _refusal(self, ctx: RunContext, claim: Claim) -> str | None:
        """Why the host will not act on this claim, or None: the claimer must be this point's
        component on a node of the run, running (as the host sees it) as the pid it names."""
        if claim.node not in ctx.cluster.nodes or claim.component != self.component:
            return (
                f"the claim names {claim.component} on {claim.node}, not a {self.component} of "
                "this run"
            )
        running = ctx.cluster.pid(claim.node, claim.component)
        if running != claim.pid:
            return (
                f"the claim names pid {claim.pid}, but the host's {claim.component} on "
                f"{claim.node} is {'not running' if running is None else f'pid {running}'}"
            )
        return None


def _said(ctx: RunContext, point: str, claim: Claim | None, since: int) -> Any:
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
