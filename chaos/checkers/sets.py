"""set-full: Jepsen's rigorous set analysis (``checker/set-full``).

Ops are ``add x`` and ``read`` (an ok read's value is every element present). For each element
whose ``add`` was invoked:

* *known* — the completion of its ok add, or the first ok read that saw it, whichever is first
  (an ``info`` add becomes known only if a read sees it);
* *last present* / *last absent* — the latest-invoked ok read that saw it / missed it (only reads
  completing after the add was invoked count);
* **stable** if some read saw it and no read invoked after that one missed it;
* **lost** if it was known, and a read invoked after the last read that saw it (and after it was
  known) missed it;
* **never read** otherwise (no read began after it was known) — not an error: an indeterminate
  add that never shows up may simply not have happened.

A stable element is **stale** when a read invoked after it was known still missed it (it took a
while to appear); that invalidates only with ``linearizable=True``.

Valid iff nothing is lost, no read returns an element twice, and nothing unexpected (never added)
is read; ``unknown`` when no element ever became stable (nothing was really tested).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from chaos.checkers._rows import OpRows, Row, completions, ordered, rows_of
from chaos.checkers.models import freeze, thaw
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.histories.ops import JSONValue, Op

__all__ = ["set_full", "set_full_rows"]

SHOWN = 50


def _hashable(v: JSONValue) -> JSONValue:  # a list or map frozen, to be hashed
    try:
        hash(v)
    except TypeError:
        return freeze(v)
    return v


def set_full_rows(rows: OpRows, *, linearizable: bool = False) -> CheckResult:
    add_invoke, known, reads, duplicated = _scan(ordered(rows, ("add", "read")))
    unexpected = _known_by_reads(reads, add_invoke, known)
    elements = set(add_invoke)
    last_present, last_absent = _last_reads(reads, elements, add_invoke)
    stable, lost, never_read, stale = _classify(elements, last_present, last_absent, known)

    def listing(xs: Iterable[Any], kind: str) -> list[dict[str, Any]]:
        out = sorted(xs, key=repr)[:SHOWN]
        return [
            {
                "type": kind,
                "element": thaw(x),
                "add_invoke_position": add_invoke.get(x),
                "known_position": known.get(x),
                "last_present_read": last_present.get(x),
                "last_absent_read": last_absent.get(x),
            }
            for x in out
        ]

    anomalies = listing(lost, "lost") + listing(sorted(unexpected, key=repr), "unexpected")
    anomalies += [
        {"type": "duplicated", "element": thaw(x), "max_multiplicity": c}
        for x, c in sorted(duplicated.items(), key=lambda kv: repr(kv[0]))[:SHOWN]
    ]
    anomalies += listing(stale, "stale")
    stats = {
        "attempt_count": len(elements),
        "stable_count": len(stable),
        "lost_count": len(lost),
        "never_read_count": len(never_read),
        "stale_count": len(stale),
        "duplicated_count": len(duplicated),
        "unexpected_count": len(unexpected),
        "read_count": len(reads),
    }
    problems = []
    if lost:
        problems.append(f"{len(lost)} element(s) lost (known added, then missing from later reads)")
    if unexpected:
        problems.append(f"{len(unexpected)} element(s) read that were never added")
    if duplicated:
        problems.append(f"{len(duplicated)} element(s) returned more than once by one read")
    if linearizable and stale:
        problems.append(f"{len(stale)} stale element(s) (missing from a read after being known)")
    if problems:
        verdict, summary = Verdict.INVALID, "; ".join(problems)
    elif not stable:
        verdict = Verdict.UNKNOWN
        summary = f"no element became stable ({len(elements)} attempted, {len(reads)} reads)"
    else:
        verdict = Verdict.VALID
        summary = (
            f"{len(stable)} of {len(elements)} element(s) stable, none lost "
            f"({len(never_read)} never read, {len(stale)} stale)"
        )
    return CheckResult(
        checker="set-full", verdict=verdict, summary=summary, anomalies=anomalies, stats=stats
    )


# ok reads as (invoke position, completion position, members)
_Reads = list[tuple[int, int, frozenset[Hashable]]]


def _scan(
    ops: list[tuple[str, Row]],
) -> tuple[dict[Hashable, int], dict[Hashable, int], _Reads, dict[Hashable, int]]:
    """Each element's add invoke position and where an ok add made it known, the ok reads, and
    the elements one read returned more than once (with the most copies)."""
    comp = completions(ops)
    add_invoke: dict[Hashable, int] = {}  # element -> position of its add's invoke
    known: dict[Hashable, int] = {}  # element -> position where it became known
    reads: _Reads = []
    duplicated: dict[Hashable, int] = {}
    for i, (f, (pos, _p, t, v, _e)) in enumerate(ops):
        if t != "invoke":
            continue
        j = comp[i]
        completion = ops[j][1] if j >= 0 else None
        if f == "add":
            x = _hashable(v)
            add_invoke.setdefault(x, pos)
            if completion is not None and completion[2] == "ok" and x not in known:
                known[x] = completion[0]
        elif completion is not None and completion[2] == "ok":
            seen = [_hashable(x) for x in (completion[3] or ())]
            if len(seen) != len(set(seen)):
                for x, c in Counter(seen).items():
                    if c > 1:
                        duplicated[x] = max(duplicated.get(x, 0), c)
            reads.append((pos, completion[0], frozenset(seen)))
    return add_invoke, known, reads, duplicated


def _known_by_reads(
    reads: _Reads, add_invoke: dict[Hashable, int], known: dict[Hashable, int]
) -> set[Hashable]:
    """Known through a read: the first read (by completion) that saw the element (``known`` is
    updated). Returns the elements read that were never added."""
    unexpected: set[Hashable] = set()
    for _, done, members in sorted(reads, key=lambda r: r[1]):
        for x in members:
            if x not in add_invoke:
                unexpected.add(x)
            elif known.get(x, done + 1) > done:
                known[x] = done
    return unexpected


def _last_reads(
    reads: _Reads, elements: set[Hashable], add_invoke: dict[Hashable, int]
) -> tuple[dict[Hashable, int], dict[Hashable, int]]:
    """Per element, the invoke position of the latest read that saw it and of the latest that
    missed it (reads that completed after its add was invoked)."""
    # Latest-invoked reads first: each element takes the first one that saw it / missed it.
    last_present: dict[Hashable, int] = {}
    last_absent: dict[Hashable, int] = {}
    for inv, done, members in sorted(reads, key=lambda r: r[0], reverse=True):
        for x in (members & elements) - last_present.keys():
            if add_invoke[x] < done:
                last_present[x] = inv
        for x in (elements - members) - last_absent.keys():
            if add_invoke[x] < done:
                last_absent[x] = inv
    return last_present, last_absent


def _classify(
    elements: set[Hashable],
    last_present: dict[Hashable, int],
    last_absent: dict[Hashable, int],
    known: dict[Hashable, int],
) -> tuple[list[Hashable], list[Hashable], list[Hashable], list[Hashable]]:
    """(stable, lost, never read, stale) elements, as Jepsen's set-full checker sorts them."""
    stable: list[Hashable] = []
    lost: list[Hashable] = []
    never_read: list[Hashable] = []
    stale: list[Hashable] = []
    for x in elements:
        lp = last_present.get(x, -1)
        la = last_absent.get(x, -1)
        k = known.get(x)
        if lp >= 0 and la < lp:
            stable.append(x)
            if k is not None and la > k:
                stale.append(x)
        elif k is not None and la > lp and la > k:
            lost.append(x)
        else:
            never_read.append(x)
    return stable, lost, never_read, stale


def set_full(history: Sequence[Op], *, linearizable: bool = False) -> CheckResult:
    return set_full_rows(rows_of(history), linearizable=linearizable)
