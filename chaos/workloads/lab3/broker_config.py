"""``broker-config``: the broker's stream and consumer are still the ones chaos made.

The broker's counts and redeliveries are evidence only while its configuration is chaos's: a
consumer made again with a long AckWait never redelivers, so a paused worker's task is never
taken over and a check-then-act bug never shows. The services' broker user may not create, update
or delete a stream or a consumer (chaos.workloads.systems.nats_auth); this is the check that it
did not happen all the same: chaos reads every stream and consumer back at the end and compares
them with what the broker reported right after chaos made them — each setting, each one added or
removed, each made again (its creation time), each paused. Any change is ``invalid``, named; a
configuration not read is ``unknown``, never valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict

NAME = "broker-config"
# settings in nanoseconds, shown in seconds
_DURATIONS = frozenset({"ack_wait", "max_age", "duplicate_window", "idle_heartbeat",
                        "inactive_threshold"})  # fmt: skip


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _show(field: str, v: Any) -> str:
    if field in _DURATIONS and isinstance(v, int) and not isinstance(v, bool):
        return f"{v / 1e9:g} s"
    return "absent" if v is None else repr(v)


def _settings(what: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    for field in sorted(set(before) | set(after)):
        if before.get(field) != after.get(field):
            out.append(f"{what}'s {field} changed from {_show(field, before.get(field))} to "
                       f"{_show(field, after.get(field))}")  # fmt: skip
    return out


def _one(what: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    if before.get("created") != after.get("created"):
        out.append(f"{what} was deleted and made again (created {after.get('created')}, chaos "
                   f"made it {before.get('created')})")  # fmt: skip
    out += _settings(what, _dict(before.get("config")), _dict(after.get("config")))
    if after.get("paused") and not before.get("paused"):
        out.append(f"{what} was paused")
    return out


def _added_removed(what: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = [f"{what} {n} was added" for n in sorted(set(after) - set(before))]
    return out + [f"{what} {n} was removed" for n in sorted(set(before) - set(after))]


def changes(created: dict[str, Any], final: dict[str, Any]) -> list[str]:
    """Every difference between the configuration chaos made and the one it read at the end."""
    before, after = _dict(created.get("streams")), _dict(final.get("streams"))
    out = _added_removed("stream", before, after)
    for name in sorted(set(before) & set(after)):
        b, a = _dict(before[name]), _dict(after[name])
        out += _one(f"stream {name}", b, a)
        bc, ac = _dict(b.get("consumers")), _dict(a.get("consumers"))
        out += _added_removed(f"stream {name}'s consumer", bc, ac)
        for c in sorted(set(bc) & set(ac)):
            out += _one(f"consumer {c} of {name}", _dict(bc[c]), _dict(ac[c]))
    return out


def broker_config(final: Mapping[str, Any] | None) -> CheckResult:
    raw = _dict((final or {}).get("broker_config"))
    created, now = raw.get("created"), raw.get("final")
    if not isinstance(created, dict) or not isinstance(now, dict):
        why = raw.get("error") or (
            "the run was stored before chaos read the broker's configuration back"
            if not raw
            else "chaos did not record the configuration it made"
        )
        return CheckResult(checker=NAME, verdict=Verdict.UNKNOWN,
                           summary=f"the broker's configuration was not compared ({why}): its "
                                   "counts may rest on settings the code under test chose")  # fmt: skip
    found = changes(created, now)
    if found:
        return CheckResult(
            checker=NAME,
            verdict=Verdict.INVALID,
            summary="the broker's configuration is not the one chaos made, so its counts and "
            "redeliveries test nothing: " + "; ".join(found),
            anomalies=[{"kind": "broker-config-changed", "change": c} for c in found],
        )
    streams = _dict(now.get("streams"))
    consumers = sum(len(_dict(_dict(s).get("consumers"))) for s in streams.values())
    return CheckResult(checker=NAME, verdict=Verdict.VALID,
                       summary=f"the broker's {len(streams)} stream(s) and {consumers} "
                               "consumer(s) are the ones chaos made, unchanged")  # fmt: skip
