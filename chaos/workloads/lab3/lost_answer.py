"""lab3's ``lost-create-response``, decided by chaos's own client, not by the api.

The api used to drop its own answer when a hold file said the point was armed: a point the code
under test reaches, so a solution that read chaos's source could make its create idempotent only
while armed. Here the orchestrator's client drops the answer: armed, the next create the api
answers with 200 is taken as unanswered (the attempt is ``indeterminate``, as a timeout is) and
retried with the same task_id on the next node. The api committed and answered; nothing it can
read says its answer went nowhere, before or after.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from chaos.core.context import RunContext

KEY = "lab3.lost_answers"
ERROR = "answer lost: chaos's client dropped the api's 200 (lost-create-response)"


class LostAnswers:
    """The armed point, and where it fired (one firing per arming)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: str | None = None
        self._fired: dict[str, list[dict[str, Any]]] = {}

    def arm(self) -> str:
        with self._lock:
            self._armed = uuid.uuid4().hex[:12]
            return self._armed

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    def take(self, ctx: RunContext, node: str, task_id: str) -> bool:
        """True when this answer is to be dropped: the point is armed (then it is not, and the
        firing is noted)."""
        with self._lock:
            gen, self._armed = self._armed, None
            if gen is None:
                return False
            self._fired[gen] = [{"node": node, "time": ctx.now(), "task_id": task_id}]
            return True

    def fired(self, gen: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._fired.get(gen, []))


def of(ctx: RunContext) -> LostAnswers:
    """The run's own (the context's state), made at the first use."""
    got = ctx.state.get(KEY)
    if not isinstance(got, LostAnswers):
        got = ctx.state.setdefault(KEY, LostAnswers())
    return got
