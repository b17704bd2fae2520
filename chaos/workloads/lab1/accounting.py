"""What etcd's own record says lab1's code under test did: every order write and every version of
the lock record, accounted for.

Pure functions of ``final.json`` → ``record`` (the replay of every transaction under ``/lab1/``, see
:mod:`chaos.workloads.systems.etcd_record`). The rules, one per key of the layout
(:mod:`chaos.workloads.lab1.keys`):

- an order's row is written only together with one application record of the same order (or
  written as it was: a row created empty), and the row's balance moves by exactly that night's
  change (``keys.change_amount``), to that night and token; every ``(order, night)`` is applied at most once over the whole record, deleted keys
  included;
- every version of the lock record has ShedLock's columns and the token; a version with the same
  token as the one before is a renewal or a release (same holder, same ``locked_at``), one with a
  larger token is a new grant, and a token never goes back;
- nothing under the prefix is deleted, and no key outside the layout is written;
- every integer goes through the one reading the final read uses
  (:func:`chaos.workloads.systems.record_values.as_int`).

A revision no rule explains is a :class:`Finding` naming the revision. The final read's balances
are checked against the record's, so state changed outside the record cannot agree with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chaos.checkers.verdict import CheckResult, Verdict
from chaos.workloads.lab1 import keys
from chaos.workloads.lab1.model import Lab1Run
from chaos.workloads.systems import record_values
from chaos.workloads.systems.record_values import Finding, as_int, describe

LOCK_COLUMNS = ("name", "lock_until", "locked_at", "locked_by", "token")


@dataclass(slots=True, kw_only=True)
class Accounting:
    """The record walked: every application by revision, the lock's grants, and the findings."""

    revisions: int = 0
    applications: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    balances: dict[str, int | None] = field(default_factory=dict)  # by the record, at its end
    order_writes: int = 0
    lock_versions: int = 0
    grants: int = 0
    findings: list[Finding] = field(default_factory=list)


def shape_of(key: str) -> str | None:
    """What a key under lab1's prefix is, or None when it matches no key of the layout."""
    if key == keys.CONFIG:
        return "config"
    for prefix, shape, parts in (
        (keys.LOCKS_PREFIX, "lock record", 1),
        (keys.ORDERS_PREFIX, "order", 1),
        (keys.NIGHTS_PREFIX, "night marker", 1),
        (keys.APPLIED_PREFIX, "application record", 3),
    ):
        rest = key[len(prefix) :].split("/")
        if key.startswith(prefix) and len(rest) == parts and all(rest):
            return shape
    return None


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _lock_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "not a lock record (a JSON object with " + ", ".join(LOCK_COLUMNS) + ")"
    missing = [c for c in LOCK_COLUMNS if c not in value]
    if missing:
        return f"no {', '.join(missing)}"
    if not (_number(value["lock_until"]) and _number(value["locked_at"])):
        return "lock_until and locked_at must be numbers (seconds)"
    if not isinstance(value["locked_by"], str):
        return "locked_by must be the replica's name"
    if as_int(value["token"]) is None:
        return (
            f"its token {describe(value['token'])} is {record_values.int_problem(value['token'])}"
        )
    return None


def _ints(value: Any, fields: tuple[str, ...]) -> str | None:
    """Why ``value`` is not a JSON object whose ``fields`` are integers, or None."""
    if not isinstance(value, dict):
        return "not a JSON object"
    for f in fields:
        if f not in value:
            return f"it has no {f}"
        problem = record_values.int_problem(value[f])
        if problem is not None:
            return f"its {f} {describe(value[f])} is {problem}"
    return None


def account(record: dict[str, Any]) -> Accounting:
    """Walk the record's transactions and interpret every write."""
    out = Accounting()
    locks: dict[str, dict[str, Any]] = {}
    rows: dict[str, tuple[int, int, int]] = {}  # order -> (balance, last_token, night) as written
    for txn in record.get("txns") or []:
        rev = int(txn.get("revision", 0))
        out.revisions += 1
        puts: dict[str, Any] = txn.get("puts") or {}
        for key in txn.get("deletes") or []:
            _delete(rev, key, locks, rows, out)
        applied = {k: v for k, v in puts.items() if shape_of(k) == "application record"}
        for key, value in puts.items():
            shape = shape_of(key)
            if shape == "lock record":
                _lock_version(rev, key, value, locks, out)
            elif shape == "order":
                _order_write(rev, key, value, applied, rows, out)
            else:
                _other_put(rev, key, value, shape, puts, out)
    return out


def _delete(
    rev: int,
    key: str,
    locks: dict[str, dict[str, Any]],
    rows: dict[str, tuple[int, int, int]],
    out: Accounting,
) -> None:
    shape = shape_of(key)
    what = f"{key} (the {shape})" if shape else key
    out.findings.append(
        Finding(
            revision=rev,
            key=key,
            kind="deleted" if shape else "foreign-key",
            why=f"rev {rev} deleted {what}: lab1 never deletes a record, and a deleted "
            "one hides what was applied or granted",
        )
    )
    if shape == "order":
        out.balances[key[len(keys.ORDERS_PREFIX) :]] = 0
        rows.pop(key[len(keys.ORDERS_PREFIX) :], None)
    if shape == "lock record":
        locks.pop(key, None)


def _other_put(
    rev: int, key: str, value: Any, shape: str | None, puts: dict[str, Any], out: Accounting
) -> None:
    """A put of no lock record and no order: a foreign key, an application record (written
    with its order), or a config or night marker (a JSON object)."""
    if shape is None:
        why = (
            f"rev {rev} wrote {key}, which is no key of lab1's layout (config, locks/, orders/, "
            "applied/, nights/): state kept beside the lab's records cannot be accounted for"
        )
        out.findings.append(Finding(revision=rev, key=key, kind="foreign-key", why=why))
    elif shape == "application record":
        order = key[len(keys.APPLIED_PREFIX) :].split("/")[0]
        if keys.order(order) not in puts:
            why = (
                f"rev {rev} wrote the application record {key} without writing order {order} "
                "in the same transaction"
            )
            out.findings.append(Finding(revision=rev, key=key, kind="unexplained-write", why=why))
    elif not isinstance(value, dict):
        why = f"rev {rev} wrote {key} (the {shape}) as {describe(value)}: not a JSON object"
        out.findings.append(Finding(revision=rev, key=key, kind="shape", why=why))


def _lock_version(
    rev: int, key: str, value: Any, locks: dict[str, dict[str, Any]], out: Accounting
) -> None:
    out.lock_versions += 1
    problem = _lock_problem(value)
    if problem is not None:
        out.findings.append(
            Finding(
                revision=rev,
                key=key,
                kind="shape",
                why=f"rev {rev} wrote the lock record {key} as {describe(value)}: {problem}",
            )
        )
        locks.pop(key, None)  # the next version is judged on its own
        return
    prev = locks.get(key)
    locks[key] = value
    if prev is None or value["token"] > prev["token"]:
        out.grants += 1
        return
    if value["token"] < prev["token"]:
        why = (
            f"rev {rev} wrote the lock record with token {value['token']} after token "
            f"{prev['token']}: a fencing token never goes back"
        )
    elif value["locked_by"] != prev["locked_by"] or value["locked_at"] != prev["locked_at"]:
        why = (
            f"rev {rev} gave the lock to {value['locked_by']} (locked_at {value['locked_at']}) "
            f"under the token {value['token']} that {prev['locked_by']} was granted at "
            f"{prev['locked_at']}: a new grant without a new token"
        )
    else:
        return  # a renewal or a release: only lock_until moved
    out.findings.append(Finding(revision=rev, key=key, kind="lock-change", why=why))


def _order_write(
    rev: int,
    key: str,
    value: Any,
    applied: dict[str, Any],
    rows: dict[str, tuple[int, int, int]],
    out: Accounting,
) -> None:
    order = key[len(keys.ORDERS_PREFIX) :]
    out.order_writes += 1
    before = out.balances.get(order, 0)
    problem = _ints(value, ("balance", "last_token", "night"))
    if problem is not None:
        out.findings.append(
            Finding(
                revision=rev,
                key=key,
                kind="unreadable",
                why=f"rev {rev} wrote order {order} as {describe(value)}: {problem}",
            )
        )
        out.balances[order] = None
        rows.pop(order, None)
        return
    row = (value["balance"], value["last_token"], value["night"])
    last, rows[order] = rows.get(order, (0, 0, 0)), row
    out.balances[order] = value["balance"]
    mine = [(k, v) for k, v in applied.items() if k.startswith(f"{keys.APPLIED_PREFIX}{order}/")]
    if not mine and row == last:
        return  # written as it was (a row created empty, or rewritten unchanged): no change
    if len(mine) != 1:
        out.findings.append(
            Finding(
                revision=rev,
                key=key,
                kind="unexplained-write",
                why=f"rev {rev} wrote order {order} (balance {value['balance']}) with "
                f"{len(mine) or 'no'} application record(s) in the same transaction: every "
                "order write is one application of one night's change",
            )
        )
        return
    akey, app = mine[0]
    problem = _ints(app, ("night", "token", "amount"))
    if problem is not None:
        out.findings.append(
            Finding(
                revision=rev,
                key=akey,
                kind="unreadable",
                why=f"rev {rev} wrote the application record {akey} as {describe(app)}: {problem}",
            )
        )
        return
    _application(rev, key, order, value, app, before, out)


def _application(
    rev: int, key: str, order: str, value: Any, app: Any, before: int | None, out: Accounting
) -> None:
    """One order write with its one application record: the change it says, and the row's."""
    night, token, amount = app["night"], app["token"], app["amount"]
    out.applications.setdefault((order, night), []).append(rev)
    want = keys.change_amount(order, night)
    moved = None if before is None else value["balance"] - before
    wrong = []
    if amount != want:
        wrong.append(f"the application says {amount:+d} but night {night}'s change is {want:+d}")
    if moved is not None and moved != want:
        wrong.append(f"the balance moved by {moved:+d} ({before} → {value['balance']})")
    if value["night"] != night or value["last_token"] != token:
        wrong.append(
            f"the row says night {value['night']} and token {value['last_token']}, the "
            f"application night {night} and token {token}"
        )
    if wrong:
        out.findings.append(
            Finding(
                revision=rev,
                key=key,
                kind="unexplained-write",
                why=f"rev {rev} applied night {night}'s change to order {order}, but "
                + "; ".join(wrong),
            )
        )


def twice(acc: Accounting) -> list[tuple[str, int, list[int]]]:
    """Every ``(order, night)`` the record shows applied more than once, with the revisions."""
    return [(o, n, revs) for (o, n), revs in sorted(acc.applications.items()) if len(revs) > 1]


def _final_read(
    final: Mapping[str, Any], acc: Accounting, told: list[tuple[str, dict[str, Any]]]
) -> None:
    """The final read's balances against the record's."""
    for order, row in final["orders"].items():
        have = as_int(row.get("balance")) if isinstance(row, dict) else None
        kept = acc.balances.get(order, 0)
        if kept is not None and have != kept:
            shown = describe(row.get("balance")) if isinstance(row, dict) else describe(row)
            told.append((f"the final read found order {order}'s balance at {shown} but etcd's "
                         f"record ends with {kept}",
                         {"kind": "final-read", "order": order, "record": kept}))  # fmt: skip


def _stats(acc: Accounting, rec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "revisions": acc.revisions,
        "order_writes": acc.order_writes,
        "applications": sum(len(v) for v in acc.applications.values()),
        "lock_versions": acc.lock_versions,
        "grants": acc.grants,
        "findings": len(acc.findings),
        "record_revisions": [rec.get("from_revision"), rec.get("to_revision")],
    }


def exactly_once(run: Lab1Run) -> CheckResult:
    """Every revision under ``/lab1/`` interpreted, every ``(order, night)`` applied at most once
    by etcd's record, and the final read's balances the record's. Missing, cut or compacted
    record: ``unknown``."""
    name = "exactly-once"
    final = run.final
    if not final or not isinstance(final.get("orders"), dict):
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary="The final state was not read, so the record of the run cannot be accounted.",
        )
    rec = final.get("record")
    reason = record_values.unusable(rec)
    if reason is not None:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"{reason[0].upper()}{reason[1:]}; without every revision, no change can be "
            "shown applied exactly once.",
        )
    assert isinstance(rec, dict)
    acc = account(rec)
    told = [(f.why, f.to_json()) for f in acc.findings]
    for order, night, revs in twice(acc):
        told.append((f"order {order}'s change of night {night} was applied {len(revs)} times by "
                     f"etcd's record, at revisions {', '.join(map(str, revs))}",
                     {"kind": "applied-more-than-once", "order": order, "night": night,
                      "revisions": revs}))  # fmt: skip
    _final_read(final, acc, told)
    sentences = [s for s, _ in told]
    anomalies = [a for _, a in told]
    stats = _stats(acc, rec)
    if anomalies:
        summary = "; ".join(sentences[:4])
        if len(sentences) > 4:
            summary += f" (and {len(sentences) - 4} more)"
        return CheckResult(
            checker=name,
            verdict=Verdict.INVALID,
            summary=summary[0].upper() + summary[1:] + ".",
            anomalies=anomalies,
            stats=stats,
        )
    return CheckResult(
        checker=name,
        verdict=Verdict.VALID,
        summary=f"By etcd's record, each of the {acc.order_writes} order writes was one "
        f"application of one night's change ({len(acc.applications)} (order, night) changes, "
        f"none twice), each of the {acc.lock_versions} versions of the lock record a grant "
        f"({acc.grants}), a renewal or a release, and all {acc.revisions} transactions under "
        f"{rec.get('prefix')} were interpreted.",
        stats=stats,
    )
