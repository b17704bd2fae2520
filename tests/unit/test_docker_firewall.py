"""The host chain of a run: its rules, what removal deletes, and which leftovers a reaper takes.

The real rules on the real host are proven in tests/integration/test_confinement_network.py; these
pin the parsing that decides which rules are the run's own (never another run's, never Docker's).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chaos.cluster.base import ClusterError
from chaos.cluster.docker import firewall as fw

SAVED = """\
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:DOCKER-USER - [0:0]
:CHAOS-HOST-abc - [0:0]
:CHAOS-HOST-abcd - [0:0]
-A INPUT -i br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc
-A INPUT -i br-2 -m comment --comment "chaos run abcd" -j CHAOS-HOST-abcd
-A INPUT -i eth0 -j ACCEPT
-A DOCKER-USER -i br-1 ! -o br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc
-A DOCKER-USER ! -i br-1 -o br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc
-A DOCKER-USER -j RETURN
-A CHAOS-HOST-abc -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
-A CHAOS-HOST-abc -p tcp -j REJECT --reject-with tcp-reset
-A CHAOS-HOST-abc -j REJECT --reject-with icmp-admin-prohibited
COMMIT
"""


def test_the_rules_send_the_bridge_to_the_chain_on_input_and_both_ways_across_forward() -> None:
    rec = fw.Record(run_id="abc", bridge="br-1", owner="1:2")
    lines = fw.rules(rec, "ipv4", "DOCKER-USER")
    assert rec.chain == "CHAOS-HOST-abc"
    jumps = [ln for ln in lines if ln.startswith("-I")]
    assert {ln.split()[1] for ln in jumps} == {"INPUT", "DOCKER-USER"}
    assert all(ln.endswith("-j CHAOS-HOST-abc") and "br-1" in ln for ln in jumps)
    assert any("-I DOCKER-USER 1 -i br-1 ! -o br-1" in ln for ln in jumps)
    assert any("-I DOCKER-USER 1 ! -i br-1 -o br-1" in ln for ln in jumps)
    # replies to what the host opened pass, the rest is refused at once
    body = [ln for ln in lines if ln.startswith("-A CHAOS-HOST-abc")]
    assert "RELATED,ESTABLISHED -j RETURN" in body[0]
    assert body[-1].endswith("REJECT --reject-with icmp-admin-prohibited")
    assert "-p tcp -j REJECT --reject-with tcp-reset" in body[1]
    assert fw.rules(rec, "ipv6", "FORWARD")[3].endswith("icmp6-adm-prohibited")


def test_removal_deletes_the_runs_jumps_and_chain_and_nothing_of_a_run_with_a_longer_name() -> None:
    undo = fw._undo_lines(SAVED, "CHAOS-HOST-abc")
    assert undo == [
        '-D INPUT -i br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc',
        '-D DOCKER-USER -i br-1 ! -o br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc',
        '-D DOCKER-USER ! -i br-1 -o br-1 -m comment --comment "chaos run abc" -j CHAOS-HOST-abc',
        "-F CHAOS-HOST-abc",
        "-X CHAOS-HOST-abc",
    ]
    assert fw._undo_lines(SAVED, "CHAOS-HOST-zzz") == []  # not there: nothing to do


def test_leftovers_are_records_of_dead_owners_and_chains_without_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fw, "_save", lambda family: SAVED if family == "ipv4" else "")
    for rid, owner in (("abc", "dead"), ("live1", "alive")):
        rec = fw.Record(run_id=rid, bridge="br-x", owner=owner)
        (tmp_path / f"{rec.chain}.json").write_text(json.dumps({"run_id": rid, "bridge": "br-x",
                                                                "owner": owner}))  # fmt: skip
    (tmp_path / "CHAOS-HOST-junk.json").write_text("{not json")
    found = fw.leftovers(tmp_path, alive=lambda token: token == "alive")
    # abc: its owner died; abcd: a chain on the host that no record names
    assert found == {"abc", "abcd"}
    assert fw.all_runs(tmp_path) == {"abc", "abcd", "live1"}


def test_a_failed_install_leaves_no_rule_and_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], stdin: str | None = None) -> Any:
        calls.append(argv)
        failed = argv[0] == "iptables-restore" and "-F" not in (stdin or "")
        return subprocess.CompletedProcess(argv, 1 if failed else 0, "", "no such table")

    monkeypatch.setattr(fw, "_run", run)
    monkeypatch.setattr(fw, "_save", lambda family: "")
    with pytest.raises(ClusterError, match="could not confine run r1"):
        fw.install(fw.Record(run_id="r1", bridge="br-1", owner="1:2"), tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert any(c[0] == "iptables-restore" for c in calls)


def test_a_run_that_starts_while_the_reaper_looks_is_not_taken_for_a_leftover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run writes its record, then its chain, between the reaper's two reads: whichever read
    comes first sees nothing of it, the second sees all of it."""
    started: list[bool] = []
    real_records = fw.read_records

    def start_now() -> None:
        if not started:
            started.append(True)
            (tmp_path / "CHAOS-HOST-new.json").write_text(
                json.dumps({"run_id": "new", "bridge": "br-n", "owner": "alive"})
            )

    def chains() -> set[str]:
        out = {"CHAOS-HOST-new"} if started else set()
        start_now()
        return out

    def records(path: Path = fw.RECORDS) -> list[fw.Record]:
        out = real_records(path)
        start_now()
        return out

    monkeypatch.setattr(fw, "installed_chains", chains)
    monkeypatch.setattr(fw, "read_records", records)
    assert fw.leftovers(tmp_path, alive=lambda token: token == "alive") == set()


def test_a_host_where_the_record_cannot_be_written_gets_no_rule_and_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(fw, "_run", lambda argv, stdin=None: calls.append(argv))
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the records' folder should be
    with pytest.raises(ClusterError, match="cannot record run r1's host rules"):
        fw.install(fw.Record(run_id="r1", bridge="br-1", owner="1:2"), blocker / "records")
    assert calls == [], "no rule before its record"
