"""lab1's section of the report page: the unsafe-lease story (chaos.report.contrib).

The story is the ``unsafe-lease`` checker's (chaos.workloads.lab1.checkers.lease_story): each of its
anomalies is one stop of a lock holder, with its numbered ``steps`` (each a sentence that starts
with its time), its ``outcome`` and the times it rests on. The page tells the first stop in which
another replica took the lock over — A acquires, the nemesis stops A, A's lease expires, B
acquires and writes, A resumes, A writes with its old token: rejected (fencing worked) or applied
(the change happened twice). Nothing is worked out again here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chaos.report.contrib import Section
from chaos.report.html import e
from chaos.report.loading import RunData
from chaos.report.sections import checker_results

__all__ = ["UnsafeLeaseSection", "lease_story"]

CHECKER = "unsafe-lease"
# outcomes of the checker's stories (see _timeline there): no takeover means no story to tell
NO_TAKEOVER = "no-takeover"
DAMAGE = ("applied-twice", "stale-applied")


def _stories(run: RunData) -> list[dict[str, Any]]:
    return [
        a
        for r in checker_results(run)
        if r.get("checker") == CHECKER
        for a in (r.get("anomalies") or [])
        if isinstance(a, dict)
        and a.get("outcome") != NO_TAKEOVER
        and isinstance(a.get("steps"), list)
        and a["steps"]
    ]


def lease_story(run: RunData) -> str:
    """The first takeover story as a numbered list, or "" when the checker told none."""
    stories = _stories(run)
    if not stories:
        return ""
    story = stories[0]
    steps = [str(s) for s in story["steps"]]
    cls = "story-bad" if story.get("outcome") in DAMAGE else "story-ok"
    items = "".join(
        f'<li class="{cls}">{e(s)}</li>' if i == len(steps) - 1 else f"<li>{e(s)}</li>"
        for i, s in enumerate(steps)
    )
    more = (
        f'<p class="muted">{len(stories) - 1} more occurrence(s) in this run.</p>'
        if len(stories) > 1
        else ""
    )
    intro = (
        "<p>The <b>unsafe-lease timeline</b>, as the unsafe-lease checker found it: a lock holder "
        "was stopped past its lease, another instance took over, and the first one woke up.</p>"
    )
    return intro + f'<ol class="story" id="unsafe-lease">{items}</ol>' + more


class UnsafeLeaseSection:
    """The *Unsafe lease* section, after the anomalies; a
    :class:`~chaos.report.contrib.SectionContributor`."""

    def expected_files(self) -> Mapping[str, str]:
        return {}

    def sections(self, run: RunData) -> Sequence[Section]:
        body = lease_story(run)
        if not body:
            return []
        return [Section(id="lease", title="Unsafe lease", html=body, after="anomalies")]
