"""``broker-config`` (chaos.workloads.lab3.broker_config): the broker's stream and consumer at the
end are the ones chaos made (issue 29: a consumer re-created with a 120 s AckWait)."""

from __future__ import annotations

import copy
from typing import Any

from chaos.checkers.verdict import Verdict
from chaos.workloads.lab3.broker_config import broker_config, changes

MADE: dict[str, Any] = {"streams": {"TASKS": {
    "config": {"name": "TASKS", "subjects": ["tasks.created"], "retention": "limits"},
    "created": "2026-12-04 16:05:50.63+00:00",
    "consumers": {"workers": {
        "config": {"durable_name": "workers", "ack_wait": 2_000_000_000, "max_deliver": -1,
                   "deliver_policy": "all"},
        "created": "2026-12-04 16:05:50.64+00:00", "paused": False}},
}}}  # fmt: skip


def _final(created: Any, final: Any) -> dict[str, Any]:
    return {"broker_config": {"created": created, "final": final}}


def test_the_configuration_chaos_made_unchanged_is_valid() -> None:
    got = broker_config(_final(MADE, copy.deepcopy(MADE)))
    assert got.verdict is Verdict.VALID and "1 stream(s) and 1 consumer(s)" in got.summary


def test_a_consumer_made_again_with_a_long_ack_wait_is_invalid_and_named() -> None:
    now = copy.deepcopy(MADE)
    c = now["streams"]["TASKS"]["consumers"]["workers"]
    c["config"]["ack_wait"] = 120_000_000_000
    c["created"] = "2026-12-04 16:06:01.00+00:00"
    got = broker_config(_final(MADE, now))
    assert got.verdict is Verdict.INVALID
    assert "consumer workers of TASKS was deleted and made again" in got.summary
    assert "consumer workers of TASKS's ack_wait changed from 2 s to 120 s" in got.summary


def test_every_kind_of_change_is_named() -> None:
    now = copy.deepcopy(MADE)
    s = now["streams"]["TASKS"]
    s["config"]["retention"] = "workqueue"
    s["config"]["subjects"] = ["tasks.>"]
    s["consumers"]["spy"] = {"config": {}, "created": "x", "paused": False}
    s["consumers"]["workers"]["paused"] = True
    del s["consumers"]["workers"]["config"]["deliver_policy"]
    now["streams"]["OTHER"] = {"config": {}, "created": "y", "consumers": {}}
    found = "; ".join(changes(MADE, now))
    for said in ("stream OTHER was added", "retention changed from 'limits' to 'workqueue'",
                 "subjects changed", "consumer spy was added", "workers of TASKS was paused",
                 "deliver_policy changed from 'all' to absent"):  # fmt: skip
        assert said in found, found
    gone = copy.deepcopy(MADE)
    gone["streams"]["TASKS"]["consumers"] = {}
    assert changes(MADE, gone) == ["stream TASKS's consumer workers was removed"]


def test_a_configuration_not_read_is_unknown_never_valid() -> None:
    assert broker_config({}).verdict is Verdict.UNKNOWN
    err = {"broker_config": {"created": MADE, "error": "TimeoutError: nats: timeout"}}
    got = broker_config(err)
    assert got.verdict is Verdict.UNKNOWN and "TimeoutError" in got.summary
    assert broker_config(_final(None, MADE)).verdict is Verdict.UNKNOWN
