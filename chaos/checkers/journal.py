"""The author journal, as checkers read it: which node wrote each etcd revision.

The journal is written by each node's root-owned etcd proxy (chaos.node.etcd_proxy) and collected
by the orchestrator into ``final.json`` → ``journal``; the code under test can neither write nor
read it, and it cannot reach etcd any other way. So where the services' own reports (``txn``
events) and the journal disagree about who wrote a revision, the journal is right.

A revision is attributed by matching etcd's record (a revision and the keys it changed) against
the journal: the write the proxy forwarded whose answer carried that revision and which wrote
those keys. A key deleted when a lease ran out is attributed to the node that granted the lease.
A write whose answer the proxy never saw (an etcd error, the member stopped) has no revision in
the journal; it is matched by its keys and values, and only when exactly one node could have
made it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaos.histories.limits import load_value
from chaos.histories.ops import JSONValue


@dataclass(frozen=True, slots=True, kw_only=True)
class Write:
    """One write a node's proxy forwarded (a journal line)."""

    node: str
    seq: int
    method: str
    outcome: str  # ok | error | injected | forwarded | refused, dropped (never reached etcd)
    revision: int | None
    succeeded: bool | None
    puts: tuple[tuple[str, JSONValue, int], ...]  # (key, value as sent, lease)
    deletes: tuple[tuple[str, str], ...]  # (key, range_end)
    maybe: tuple[
        tuple[str, JSONValue, int], ...
    ]  # the other branch's puts, when the outcome is unknown
    lease: int | None
    time: float | None
    gen: str | None = None

    @property
    def wrote(self) -> bool:
        return (
            self.outcome == "ok" and self.succeeded is not False and bool(self.puts or self.deletes)
        )

    def writes_key(self, key: str) -> bool:
        return any(k == key for k, _, _ in self.puts) or any(
            _in_range(key, k, end) for k, end in self.deletes
        )

    def value_of(self, key: str) -> JSONValue:
        """The value this write put at ``key`` (JSON decoded where it is JSON), or None."""
        for k, v, _ in self.puts:
            if k == key:
                return decode(v)
        return None

    def cite(self) -> dict[str, Any]:
        """The journal line as evidence."""
        out: dict[str, Any] = {"node": self.node, "seq": self.seq, "method": self.method,
                               "outcome": self.outcome, "revision": self.revision}  # fmt: skip
        if self.time is not None:
            out["time"] = round(self.time, 6)
        return out


def decode(v: JSONValue) -> JSONValue:
    """A journalled value read as the record reads it (a value nested too deep is the same
    marker in both, never a RecursionError)."""
    if isinstance(v, str):
        try:
            return load_value(v)
        except ValueError:
            return v
    return v


def _in_range(key: str, start: str, end: str) -> bool:
    if not end:
        return key == start
    if end == "\x00":
        return key >= start
    return start <= key < end


def _int(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _puts(raw: object) -> tuple[tuple[str, JSONValue, int], ...]:
    out = []
    for p in raw if isinstance(raw, list) else []:
        if isinstance(p, dict) and isinstance(p.get("key"), str):
            out.append((p["key"], p.get("value"), _int(p.get("lease")) or 0))
    return tuple(out)


def _deletes(raw: object) -> tuple[tuple[str, str], ...]:
    out = []
    for d in raw if isinstance(raw, list) else []:
        if isinstance(d, dict) and isinstance(d.get("key"), str):
            out.append((d["key"], str(d.get("range_end") or "")))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Journal:
    """Every node's writes, and what could not be read of the journal."""

    writes: tuple[Write, ...]
    problems: tuple[str, ...]  # in words: unread journals, bad lines
    nodes: tuple[str, ...]  # the nodes whose journal was read
    # node → why its journal, or part of it, was not read (the collection's own record); None:
    # a run stored before the collection recorded it (then only ``problems`` say, in words)
    unread: Mapping[str, str] | None = None

    def by_revision(self) -> dict[int, list[Write]]:
        out: dict[int, list[Write]] = defaultdict(list)
        for w in self.writes:
            if w.revision is not None and w.outcome == "ok":
                out[w.revision].append(w)
        return out


def read_journal(final: Mapping[str, Any] | None) -> Journal | None:
    """The journal in a final state, or None when the run has none (stored before it existed)."""
    raw = (final or {}).get("journal")
    if not isinstance(raw, Mapping) or not isinstance(raw.get("entries"), list):
        return None
    problems = [str(p) for p in raw.get("problems") or [] if isinstance(p, str)]
    writes = []
    for i, e in enumerate(raw["entries"]):
        if not isinstance(e, Mapping) or not isinstance(e.get("node"), str):
            problems.append(f"journal entry {i} has no node")
            continue
        other = e.get("other_branch") if isinstance(e.get("other_branch"), Mapping) else {}
        succeeded = e.get("succeeded")
        t = e.get("time")
        writes.append(
            Write(
                node=e["node"],
                seq=_int(e.get("seq")) or 0,
                method=str(e.get("method", "")),
                outcome=str(e.get("outcome", "")),
                revision=_int(e.get("revision")),
                succeeded=succeeded if isinstance(succeeded, bool) else None,
                puts=_puts(e.get("puts")),
                deletes=_deletes(e.get("deletes")),
                maybe=_puts((other or {}).get("puts")),
                lease=_int(e.get("lease")),
                time=float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None,
                gen=str(e["gen"]) if e.get("gen") is not None else None,
            )
        )
    nodes = raw.get("nodes") if isinstance(raw.get("nodes"), Mapping) else {}
    return Journal(writes=tuple(writes), problems=tuple(problems),
                   nodes=tuple(sorted(nodes or {})), unread=_unread(raw.get("unread")))  # fmt: skip


def _unread(raw: object) -> dict[str, str] | None:
    """``journal.unread`` (node → reason), or None when the run has none: a malformed one is
    read as "unknown which", never as "every journal was read"."""
    if not isinstance(raw, Mapping):
        return None
    return {str(node): str(why) for node, why in raw.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Author:
    """Who wrote one revision: the node, the journal line, and how it was matched."""

    node: str
    write: Write
    how: str  # "revision" | "lease-expiry" | "content"


class Authors:
    """Attribute revisions of etcd's record to the nodes whose proxies forwarded them."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._rev = journal.by_revision()
        # leases granted through a proxy, and the keys written with them
        self._lease_owner: dict[int, Write] = {
            w.lease: w
            for w in journal.writes
            if w.method == "Lease/LeaseGrant" and w.lease is not None and w.outcome == "ok"
        }
        self._lease_keys: dict[str, set[int]] = defaultdict(set)
        for w in journal.writes:
            for k, _, lease in w.puts:
                if lease:
                    self._lease_keys[k].add(lease)

    def author(
        self,
        revision: int,
        written: Iterable[str],
        *,
        deleted: Iterable[str] = (),
        values: Mapping[str, Any] | None = None,
    ) -> Author | None:
        """The node that wrote revision ``revision`` of etcd's record: ``written`` and ``deleted``
        are keys it put and deleted (all or some of them); ``values`` what etcd holds for the puts
        (JSON decoded), to match a write whose answer the proxy never saw. None when no proxy
        forwarded it."""
        puts = {k: (values or {}).get(k) for k in written}
        deletes = list(deleted)
        keys = [*puts, *deletes]
        for w in self._rev.get(revision, []):
            if w.wrote and all(w.writes_key(k) for k in keys):
                return Author(node=w.node, write=w, how="revision")
            if (
                w.method == "Lease/LeaseRevoke"
                and not puts
                and deletes
                and all(w.lease in self._lease_keys.get(k, ()) for k in deletes)
            ):
                return Author(node=w.node, write=w, how="revision")
        if not puts and deletes:
            # a lease that ran out deleted keys written with it: the node that granted it
            grants = [
                self._lease_owner[lease]
                for k in deletes
                for lease in sorted(self._lease_keys.get(k, ()))
                if lease in self._lease_owner
            ]
            if len({g.node for g in grants}) == 1:
                return Author(node=grants[0].node, write=grants[0], how="lease-expiry")
        if values:
            # a write whose answer was lost: the same keys and values, sent by one node only
            cands = [
                w
                for w in self.journal.writes
                if w.outcome in ("error", "forwarded")
                and all(
                    any(k == pk and decode(pv) == v for pk, pv, _ in (*w.puts, *w.maybe))
                    for k, v in values.items()
                )
            ]
            if cands and len({w.node for w in cands}) == 1:
                return Author(node=cands[0].node, write=cands[0], how="content")
        return None

    def unresolved(self, key: str) -> list[Write]:
        """Writes of ``key`` whose outcome the proxy never learnt."""
        return [
            w
            for w in self.journal.writes
            if w.outcome in ("error", "forwarded")
            and (w.writes_key(key) or any(k == key for k, _, _ in w.maybe))
        ]
