"""lab1's lease operations judged by their authors, from the nodes' proxy journals.

Every version of the lock record and every order write is attributed to the node whose etcd proxy
forwarded it (chaos.checkers.journal) — never to the ``locked_by`` the record claims, the ``node``
an application record names, or a ``txn`` event: those are what the code under test wrote.

- a *grant* is a version whose (locked_by, locked_at, token) is new; its author holds it. A grant
  whose record names another holder than its author is forged;
- a *lease operation* (a release, a renewal, any rewrite of the same grant — or an old grant
  written back over a newer one) must come from the node holding the grant it touches;
- an *order write* carries a fencing token: its author must be the node that was granted that
  token;
- a deletion of the lock record must come from its holder;
- a version or a write no journal line accounts for was made around the proxies: invalid, or
  unknown when a write whose answer the proxy never saw may have been it.

Each anomaly names both grants: the one touched and the author's own latest one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.checkers.journal import Author, Authors, Journal, Write
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.model import Lab1Run

NAME = "lease-authors"
UNKNOWN = "an author no journal names"
SOURCE = "the nodes' etcd-proxy journals"


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldGrant:
    """A grant as the journal attributes it: the node whose proxy wrote it."""

    token: Any
    holder: str
    claimed: Any  # the record's own locked_by
    rev: int

    def to_json(self) -> dict[str, Any]:
        return {"token": self.token, "holder": self.holder, "locked_by": self.claimed,
                "rev": self.rev}  # fmt: skip

    def name(self) -> str:
        return f"grant token {self.token} (held by {self.holder}, rev {self.rev})"


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _record(v: Mapping[str, Any]) -> dict[str, Any]:
    return {k: x for k, x in v.items() if k != "rev"}


def _ident(v: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return (v.get("locked_by"), v.get("locked_at"), v.get("token"))


def _said(op: str) -> str:
    return {
        "renewal": "a renewal: lock_until moved later",
        "release": "a release: lock_until moved earlier",
    }.get(op, op)


def _cite(a: Author) -> dict[str, Any]:
    return {**a.write.cite(), "matched_by": a.how}


class _Judge:
    def __init__(self, authors: Authors, lock_key: str) -> None:
        self.authors = authors
        self.lock_key = lock_key
        self.anomalies: list[dict[str, Any]] = []
        self.sentences: list[str] = []
        self.unknown: list[str] = []
        self.grants: list[HeldGrant] = []

    def add(self, kind: str, sentence: str, **data: Any) -> None:
        self.sentences.append(sentence)
        self.anomalies.append({"kind": kind, "summary": sentence, "source": SOURCE, **data})

    def own(self, node: str, before: int) -> HeldGrant | None:
        return next((g for g in reversed(self.grants) if g.holder == node and g.rev < before), None)

    def holding(self, rev: int) -> HeldGrant | None:
        return next((g for g in reversed(self.grants) if g.rev < rev), None)

    def unauthored(self, what: str, rev: int, key: str, **data: Any) -> None:
        maybe = self.authors.unresolved(key)
        if maybe:
            self.unknown.append(
                f"{what} at rev {rev} has no author in the journal; {len(maybe)} write(s) of "
                f"{key} whose answer the proxy never saw may have made it"
            )
            return
        self.add(
            "unauthored",
            f"{what} at rev {rev} was written around the nodes' etcd proxies: no journal line "
            "accounts for it",
            rev=rev,
            key=key,
            **data,
        )

    def lock_versions(self, versions: Sequence[Mapping[str, Any]]) -> int:
        """Judge every version of the lock record; returns how many were attributed."""
        seen: dict[tuple[Any, Any, Any], HeldGrant] = {}
        prev: Mapping[str, Any] | None = None
        current: HeldGrant | None = None
        ok = 0
        for v in versions:
            rev = int(v["rev"])
            a = self.authors.author(rev, [self.lock_key], values={self.lock_key: _record(v)})
            if a is None:
                current = self._unauthored_version(v, prev, seen) or current
            else:
                ok += 1
                current = self._version(v, a, prev, current, seen)
            prev = v
        return ok

    def _unauthored_version(
        self,
        v: Mapping[str, Any],
        prev: Mapping[str, Any] | None,
        seen: dict[tuple[Any, Any, Any], HeldGrant],
    ) -> HeldGrant | None:
        """A version no journal line accounts for; a new grant by nobody known (returned) is not
        judged by author."""
        rev = int(v["rev"])
        self.unauthored("the lock record's version", rev, self.lock_key, record=_record(v))
        if _ident(v) == _ident(prev or {}) or _ident(v) in seen:
            return None
        g = HeldGrant(token=v.get("token"), holder=UNKNOWN, claimed=v.get("locked_by"), rev=rev)
        seen[_ident(v)] = g
        self.grants.append(g)
        return g

    def _version(
        self,
        v: Mapping[str, Any],
        a: Author,
        prev: Mapping[str, Any] | None,
        current: HeldGrant | None,
        seen: dict[tuple[Any, Any, Any], HeldGrant],
    ) -> HeldGrant | None:
        """One attributed version: a new grant (its author holds it), or an operation on the
        current one (or an old grant written back); returns the grant the record holds after."""
        rev, ident = int(v["rev"]), _ident(v)
        fresh = current is None or ident != _ident(prev or {})
        if fresh and ident not in seen:
            g = HeldGrant(token=v.get("token"), holder=a.node, claimed=v.get("locked_by"),
                          rev=rev)  # fmt: skip
            seen[ident] = g
            self.grants.append(g)
            if v.get("locked_by") != a.node:
                self.add(
                    "grant-forged-holder",
                    f"a grant with a forged holder: {a.node} wrote the lock record at rev "
                    f"{rev} naming {v.get('locked_by')!r} as its holder (token "
                    f"{v.get('token')})",
                    grants=[g.to_json()],
                    journal=_cite(a),
                )
            return g
        if current is not None and current.holder not in (a.node, UNKNOWN):
            self._by_other(v, a, prev, current, seen.get(ident) if fresh else None)
        # an old grant written back: the record holds it again
        return seen[ident] if fresh else current

    def _by_other(
        self,
        v: Mapping[str, Any],
        a: Author,
        prev: Mapping[str, Any] | None,
        touched: HeldGrant,
        old: HeldGrant | None,
    ) -> None:
        rev = int(v["rev"])
        mine = self.own(a.node, rev)
        op = self._operation(prev, v, old)
        theirs = mine.name() if mine is not None else "no grant of its own"
        self.add(
            "lease-op-by-other",
            f"a lease operation ({_said(op)}) by a replica that does not hold the grant "
            f"it touches: {a.node} "
            f"wrote the lock record at rev {rev} over {touched.name()}; {a.node} held "
            f"{theirs}",
            operation=op,
            grants=[touched.to_json(), mine.to_json() if mine is not None else None],
            author=a.node,
            rev=rev,
            journal=_cite(a),
        )

    @staticmethod
    def _operation(
        prev: Mapping[str, Any] | None, v: Mapping[str, Any], old: HeldGrant | None
    ) -> str:
        if old is not None:
            return f"rewrite of an earlier grant (token {old.token})"
        before, after = (prev or {}).get("lock_until"), v.get("lock_until")
        if isinstance(before, int | float) and isinstance(after, int | float):
            return "renewal" if after > before else "release"
        return "rewrite"

    def lock_deletes(self, writes: Sequence[Write]) -> None:
        for w in writes:
            if not (w.wrote and w.revision is not None and w.writes_key(self.lock_key)):
                continue
            if any(k == self.lock_key for k, _, _ in w.puts):
                continue  # a version: judged above
            held = self.holding(w.revision)
            if held is None or held.holder in (w.node, UNKNOWN):
                continue
            mine = self.own(w.node, w.revision)
            self.add(
                "lease-op-by-other",
                f"a deletion of the lock by a replica that does not hold it: {w.node} deleted "
                f"the lock record at rev {w.revision} while {held.name()} was current; "
                f"{w.node} held {mine.name() if mine is not None else 'no grant of its own'}",
                operation="delete",
                grants=[held.to_json(), mine.to_json() if mine is not None else None],
                author=w.node,
                rev=w.revision,
                journal=w.cite(),
            )

    def order_writes(self, orders: Mapping[str, Any]) -> int:
        by_token: dict[Any, HeldGrant] = {}
        for g in self.grants:
            by_token.setdefault(g.token, g)
        n = 0
        for order_id, row in orders.items():
            applied = row.get("applied") if isinstance(row, Mapping) else None
            for app in applied if isinstance(applied, list) else []:
                rev = _int(app.get("rev")) if isinstance(app, Mapping) else None
                if rev is None:
                    continue
                key = keys.order(str(order_id))
                a = self.authors.author(rev, [key])
                if a is None:
                    self.unauthored(f"the write of {order_id} (night {app.get('night')})", rev, key)
                    continue
                n += 1
                granted = by_token.get(app.get("token"))
                if granted is None or granted.holder in (a.node, UNKNOWN):
                    continue  # a token no grant gave: stale-writes' finding, not an author's
                g = granted
                mine = self.own(a.node, rev)
                self.add(
                    "write-under-other-grant",
                    f"an order write under another replica's grant: {a.node} wrote {order_id} "
                    f"(night {app.get('night')}) at rev {rev} with token {app.get('token')}, "
                    f"but {g.name()}; {a.node} held "
                    f"{mine.name() if mine is not None else 'no grant of its own'}",
                    grants=[g.to_json(), mine.to_json() if mine is not None else None],
                    author=a.node,
                    claimed_node=app.get("node"),
                    rev=rev,
                    journal=_cite(a),
                )
        return n


def unread_journals(journal: Journal) -> str | None:
    """Why a node's journal, or part of it, was not read, from the collection's own record
    (``unread``: node → reason; chaos.workloads.systems.etcd_proxy.collect); None when every
    node's journal was read whole. A run stored before that record existed: when its collection
    reported any problem, which nodes were unread cannot be told, and that is the reason."""
    if journal.unread is None:
        if not journal.problems:
            return None  # its collector named every journal it could not read a problem: none
        return (
            "this run was stored before the journal named the nodes it could not read, and its "
            f"collection reported problems ({'; '.join(journal.problems[:3])}), so whether a "
            "node's journal is missing cannot be told"
        )
    if not journal.unread:
        return None
    nodes = sorted(journal.unread)
    told = "; ".join(f"{n}: {journal.unread[n]}" for n in nodes[:3])
    return f"the journal of {', '.join(nodes)} could not be read ({told})"


def _versions(final: Mapping[str, Any], journal: Journal, lock_key: str) -> list[Mapping[str, Any]]:
    """Every version of the lock record in etcd's order: the final read's history, then the
    lock writes the journal holds past its last version."""
    history_ = final.get("lock_history")
    versions = sorted(
        (v for v in history_ if isinstance(v, Mapping) and _int(v.get("rev")))
        if isinstance(history_, list)
        else [],
        key=lambda v: int(v["rev"]),
    )
    # the journal is collected after the final reads: a lock write it holds past the last
    # version read (a holder resumed by the final heal) is judged too
    last = int(versions[-1]["rev"]) if versions else 0
    late = sorted(
        (w for w in journal.writes if w.wrote and w.revision and w.revision > last),
        key=lambda w: w.revision or 0,
    )
    for w in late:
        value = w.value_of(lock_key)
        if isinstance(value, Mapping):
            versions.append({**value, "rev": w.revision})
    return versions


def _verdict(judge: _Judge, journal: Journal, stats: dict[str, Any], versions: int,
             writes_ok: int) -> CheckResult:  # fmt: skip
    unread = unread_journals(journal)
    if unread and judge.anomalies and all(a["kind"] == "unauthored" for a in judge.anomalies):
        # a node's journal that could not be read explains a write it does not hold: who wrote
        # it cannot be told, which is not the same as nobody's proxy forwarding it
        return CheckResult(
            checker=NAME,
            verdict=Verdict.UNKNOWN,
            summary=f"{len(judge.anomalies)} write(s) have no author, and {unread}: who wrote "
            "them is unknown.",
            stats=stats,
        )
    if judge.anomalies:
        more = f" (and {len(judge.sentences) - 3} more)" if len(judge.sentences) > 3 else ""
        return CheckResult(
            checker=NAME,
            verdict=Verdict.INVALID,
            summary="; ".join(judge.sentences[:3]) + more + f" — by {SOURCE}.",
            anomalies=judge.anomalies,
            stats=stats,
        )
    if judge.unknown:
        return CheckResult(checker=NAME, verdict=Verdict.UNKNOWN,
                           summary="; ".join(judge.unknown[:3]) + ".", stats=stats)  # fmt: skip
    return CheckResult(
        checker=NAME,
        verdict=Verdict.VALID,
        summary=f"Every lease operation was made by the grant's holder: {versions} version(s) "
        f"of the lock record ({len(judge.grants)} grant(s)) and {writes_ok} order write(s), "
        f"each attributed by {SOURCE}, not by the services' reports.",
        stats=stats,
    )


def lease_authors(run: Lab1Run) -> CheckResult:
    """Every lease operation and order write by the replica that holds the grant it touches,
    by the proxies' journals."""
    journal = run.journal
    if journal is None:
        return CheckResult(
            checker=NAME,
            verdict=Verdict.UNKNOWN,
            summary="No author journal in this run (stored before the nodes' etcd proxies "
            "existed, or the final reads failed): who wrote each lease operation is unknown.",
        )
    final = run.final or {}
    config = final.get("config") if isinstance(final.get("config"), Mapping) else {}
    lock_key = keys.lock(str((config or {}).get("lock") or keys.JOB))
    versions = _versions(final, journal, lock_key)
    judge = _Judge(Authors(journal), lock_key)
    lock_ok = judge.lock_versions(versions)
    judge.lock_deletes(journal.writes)
    orders = final.get("orders") if isinstance(final.get("orders"), Mapping) else {}
    writes_ok = judge.order_writes(orders or {})
    stats: dict[str, Any] = {
        "lock_versions": len(versions),
        "attributed_versions": lock_ok,
        "order_writes": writes_ok,
        "grants": len(judge.grants),
        "journal_lines": len(journal.writes),
        "journal_problems": list(journal.problems),
        "unread_journals": dict(journal.unread) if journal.unread is not None else None,
        "from": SOURCE,
    }
    return _verdict(judge, journal, stats, len(versions), writes_ok)
