"""``etcd-scope``: whether the code under test asked etcd for what no lab allows.

Each node's root-owned etcd proxy (chaos.node.etcd_proxy) forwards only the calls a lab needs, on
the lab's own keys (chaos.node.etcd_scope), and journals every call it refuses. Only the lab's
services reach a proxy (the orchestrator reads and writes etcd directly), and chaos's transport
makes none of the refused calls, so a refusal in the journal is the solution's: it tried to
enable authentication, compact the history, list members, or read or write a key outside the
lab's prefix — a side channel no checker reads, or a way to lock chaos out. The call did not
reach etcd, but a solution that reaches for it is not one the lab can pass: the run is
``invalid``, naming each refusal (node, call, reason, when). Without every node's journal it is
``unknown``: a refusal may be in the part not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.node.etcd_scope import REFUSED  # the proxy's outcome for a call it refused

NAME = "etcd-scope"
SHOWN = 20


def _refusals(journal: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for e in journal.get("entries") or []:
        if isinstance(e, Mapping) and e.get("outcome") == REFUSED:
            out.append({
                "node": str(e.get("node")),
                "seq": e.get("seq"),
                "method": str(e.get("method")),
                "reason": str(e.get("reason")),
                "time": e.get("time"),
            })  # fmt: skip
    return out


def _say(r: Mapping[str, Any]) -> str:
    at = f" at {r['time']:.2f} s" if isinstance(r.get("time"), int | float) else ""
    return f"the etcd proxy on {r['node']} refused {r['method']}{at}: {r['reason']}"


def etcd_scope(final: Mapping[str, Any] | None) -> CheckResult:
    """Invalid when a node's proxy refused a call; unknown when a journal is missing or unread."""
    journal = (final or {}).get("journal")
    if not isinstance(journal, Mapping) or not isinstance(journal.get("entries"), list):
        return CheckResult(checker=NAME, verdict=Verdict.UNKNOWN,
                           summary="the run has no etcd-proxy journal: whether the code under "
                                   "test asked etcd for what the lab forbids cannot be told")  # fmt: skip
    refused = _refusals(journal)
    if refused:
        more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
        return CheckResult(
            checker=NAME,
            verdict=Verdict.INVALID,
            summary=f"the code under test made {len(refused)} call(s) the lab forbids: "
            + "; ".join(_say(r) for r in refused[:3])
            + more,
            anomalies=[{"kind": "refused-etcd-call", **r} for r in refused[:SHOWN]],
            stats={"refused": len(refused)},
        )
    unread = journal.get("unread")
    # a run stored before the collection recorded what it could not read: its problems say
    problems = [str(p) for p in journal.get("problems") or []]
    if (isinstance(unread, Mapping) and unread) or (not isinstance(unread, Mapping) and problems):
        why = (
            "; ".join(f"{n}: {w}" for n, w in unread.items())
            if isinstance(unread, Mapping)
            else "; ".join(problems[:3])
        )
        return CheckResult(checker=NAME, verdict=Verdict.UNKNOWN,
                           summary=f"not every node's etcd-proxy journal was read ({why}): a "
                                   "refused call may be in what was not")  # fmt: skip
    return CheckResult(checker=NAME, verdict=Verdict.VALID,
                       summary="no node's etcd proxy refused a call: the code under test used "
                               "only the lab's keys and calls")  # fmt: skip
