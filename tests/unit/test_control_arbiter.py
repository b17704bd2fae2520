"""Claims of points armed for any node when the nodes hold copies: the orchestrator's answer
decides, so that exactly one claimer fires (chaos.node.runtime, ARBITER_ENV). Either way a claim
fires only once the orchestrator granted that arming to the claimer's own pid."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from chaos.node import runtime
from chaos.node.runtime import ARBITER_ENV, EventLog, Hooks, Identity


def hooks(tmp_path: Path, node: str) -> tuple[Hooks, Path]:
    control = tmp_path / node / "control"
    (control / "any").mkdir(parents=True)
    (control.parent / "claims").mkdir()  # the shared folder's claims (no arbiter)
    ident = Identity(node=node, component="relay")
    return Hooks(control, ident, EventLog(tmp_path / node / f"{node}.jsonl", ident)), control


def answer_first_claim(control: Path, verdict: str) -> threading.Thread:
    def run() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            claims = [p for p in (control / "any").glob("p.claimed-*") if "." not in p.name[10:]]
            if claims:
                claims[0].with_name(claims[0].name + f".{verdict}").write_text("")
                return
            time.sleep(0.005)

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.parametrize(("verdict", "fired"), [("granted", True), ("denied", False)])
def test_a_claim_fires_only_when_granted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: str, fired: bool
) -> None:
    monkeypatch.setenv(ARBITER_ENV, "1")
    h, control = hooks(tmp_path, "n1")
    (control / "any" / "p").write_text(json.dumps({"armed_at": 1.0}))
    grant(control)  # the orchestrator's own answer, after the arbiter's
    t = answer_first_claim(control, verdict)
    assert h.armed("p") is fired
    t.join()
    assert not (control / "any" / "p").exists()  # claimed (renamed) either way


def test_without_an_answer_a_claim_counts_as_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ARBITER_ENV, "1")
    monkeypatch.setattr(runtime, "GRANT_TIMEOUT", 0.1)
    h, control = hooks(tmp_path, "n1")
    (control / "any" / "p").write_text("{}")
    assert h.armed("p") is False


def grant(control: Path, *, granted: bool = True, pid: int | None = None) -> None:
    answer = {"gen": "0", "granted": granted, "pid": os.getpid() if pid is None else pid}
    (control / "any" / "p.answer").write_text(json.dumps(answer))


def test_a_shared_folder_claim_is_exclusive_and_fires_on_the_orchestrators_grant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ARBITER_ENV, raising=False)
    h, control = hooks(tmp_path, "n1")
    (control / "any" / "p").write_text("{}")
    grant(control)
    assert h.armed("p") is True and h.armed("p") is False  # one shot
    # claimed once, by an exclusive file beside the control folder, never by touching the latter
    assert (control / "any" / "p").exists()
    # and the answer taken is said beside the claim
    names = sorted(c.name for c in (control.parent / "claims").iterdir())
    assert names == ["any-p.0", "any-p.0.answered"]
    claim = json.loads((control.parent / "claims" / "any-p.0").read_text())
    assert claim == {"node": "n1", "component": "relay", "pid": os.getpid()}


@pytest.mark.parametrize("answer", ["denied", "another pid", "none"])
def test_a_claim_the_orchestrator_did_not_grant_to_this_process_does_not_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    monkeypatch.delenv(ARBITER_ENV, raising=False)
    monkeypatch.setattr(runtime, "ANSWER_TIMEOUT", 0.2)
    h, control = hooks(tmp_path, "n1")
    (control / "any" / "p").write_text("{}")
    if answer == "denied":
        grant(control, granted=False)
    elif answer == "another pid":
        grant(control, pid=4000000)
    assert h.armed("p") is False


def test_a_granted_crash_point_waits_for_the_host_and_keeps_its_delivery_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ARBITER_ENV, raising=False)
    monkeypatch.setattr(runtime, "KILL_WAIT", 0.3)
    monkeypatch.setattr(runtime, "KEEPALIVE_EVERY", 0.05)
    h, control = hooks(tmp_path, "n1")
    (control / "any" / "p").write_text("{}")
    grant(control)
    calls: list[float] = []
    t0 = time.monotonic()
    # no kill comes (no orchestrator here): the process never exits by itself, it goes on
    h.stop_for_crash_if_armed("p", keepalive=lambda: calls.append(time.monotonic()))
    assert time.monotonic() - t0 >= 0.3
    assert len(calls) >= 3
