"""Linearizability: Wing & Gong's search with Lowe's just-in-time linearization and memoisation.

The history is split by key (P-compositionality: a history is linearizable iff each key's
sub-history is), and each key is searched like Porcupine does:

* calls and returns sit in one doubly linked list in history order (arrays of ints, so lifting
  an op out and putting it back are four list stores — Knuth's dancing links);
* the search linearizes, at each point, one of the calls that come before the first pending
  return; reaching a return whose op is not yet linearized means backtracking;
* a cache of ``(bitmask of linearized ops, model state)`` pairs cuts every branch that reaches a
  configuration seen before (Lowe's memoisation; the bitmask is a Python int).

Indeterminate ops (``info``, or never completed) have no return: they may be linearized anywhere
after their invoke or not at all (Knossos' and Porcupine's semantics; their return time is
+infinity), and the search succeeds as soon as every determinate op is linearized. Indeterminate
reads tell nothing and are dropped before the search; ``fail`` ops did not happen. The search
tries indeterminate ops after the determinate candidates and cuts configurations dominated by
failed ones (see :func:`_search`), which keeps timed-out ops from multiplying the search.

The keys' searches run interleaved in small slices, so one illegal key ends the whole check early
even when another key is expensive; a time limit and a cap on cached states turn a search that
would run too long into ``unknown``. On failure the evidence names the op that could not be
linearized and the longest linearizable prefix found, as JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from chaos.checkers.budget import DEFAULT_MAX_STATES, DEFAULT_TIME_LIMIT
from chaos.checkers.models import MODELS, UNKNOWN, Input, Model, UnknownOp, _show, freeze, thaw
from chaos.checkers.register_precheck import REGISTER_MODELS, precheck_register
from chaos.checkers.register_records import register_records
from chaos.checkers.verdict import CheckResult, Verdict
from chaos.exits import keep_until_exit
from chaos.histories.ops import JSONValue, Op, OpType

__all__ = [
    "KEYED_NOTE",
    "OrphanCompletions",
    "Partition",
    "check_linearizable",
    "check_partitions",
    "prepare",
]

PREFIX_SHOWN = 200  # longest-prefix evidence keeps at most this many ops (the tail)
_SLICE = 4096  # search steps between looks at the clock / switches to another key
_KEPT_CACHE = 1 << 16  # a finished search's cache this large goes with the process (chaos.exits)

_NO_KEY: JSONValue = None
KEYED_NOTE = (
    "the values look like Jepsen independent [key value] tuples (every invoke is a pair and "
    "reads are invoked as [k nil]), but keys are split only when asked: checked as ONE "
    "register of pair values; pass --independent (independent=True) to check each key apart"
)


@dataclass(slots=True, kw_only=True)
class Partition:
    """One key's ops, ready for the search. Op ids are 0..n-1 in invocation order; ``events``
    lists the nodes in history order, ``2*id`` for a call and ``2*id+1`` for a return
    (indeterminate ops have no return)."""

    key: JSONValue  # the ops' key, as decoded; _NO_KEY when not split by key
    inputs: list[Input] = field(default_factory=list)
    outputs: list[object] = field(default_factory=list)
    determinate: list[bool] = field(default_factory=list)
    # determinate ops that leave every state unchanged (reads): forced moves in the search
    pure: list[bool] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    # (invoke, completion) of each op, for evidence; None for ops built without a history
    sources: list[tuple[Op, Op | None]] | None = None


@dataclass(slots=True)
class _Outcome:
    legal: bool
    states: int
    longest: list[int]
    blocked: int = -1  # op that could not be linearized after ``longest``
    state: object = None  # the model's state, opaque here


# -------------------------------------------------------------------- preparing


def _is_pair(v: object) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2


@dataclass(slots=True)
class _Pairs:
    """Each client invoke with its completion (None: it never completed), in invocation order,
    and where each sits in the history (``NEVER`` for a completion that never came)."""

    invokes: list[Op]
    completions: list[Op | None]
    invoke_at: list[int]
    completion_at: list[int]
    unmatched: list[int]  # positions of completions with no open invoke of their process
    # every invoke's value is a [k v] pair and some read was invoked with [k nil] (see _pair)
    looks_independent: bool
    all_pairs: bool  # every invoke's value is a [k v] pair (what --independent needs)


_NEVER = 1 << 62  # the position of a return that never came: after every real one


def _pair(history: Sequence[Op]) -> _Pairs:
    """Pair invokes with completions by process (Jepsen's pairing), and in the same pass tell
    whether ``[k v]`` values look like Jepsen's independent ``[key value]`` tuples.

    Jepsen prints its independent tuples as plain 2-vectors, so the shape alone is ambiguous: a
    register whose values are pairs looks the same. So keys are never inferred (see
    :func:`prepare`); the shape only earns a note: every client invoke's value is a pair and at
    least one read (or get) was invoked with ``[k nil]``, as Jepsen invokes an independent read.
    """
    invokes: list[Op] = []
    completions: list[Op | None] = []
    invoke_at: list[int] = []
    completion_at: list[int] = []
    slot_of: dict[int | str, int] = {}  # process -> its open op's slot
    unmatched: list[int] = []
    invoke = OpType.INVOKE
    pairs_only = True
    valued_read = witness = False
    for pos, op in enumerate(history):
        p = op.process
        if p.__class__ is str and p == "nemesis":
            continue
        if op.type is invoke:
            # A process that invokes again without completing leaves its earlier op open for
            # ever: indeterminate, like an invoke at the end of the history.
            slot_of[p] = len(invokes)
            invokes.append(op)
            completions.append(None)
            invoke_at.append(pos)
            completion_at.append(_NEVER)
            if pairs_only:
                v = op.value
                t = v.__class__
                if (t is not list and t is not tuple) or len(v) != 2:
                    pairs_only = False
                elif op.f == "read" or op.f == "get":
                    if v[1] is None:
                        witness = True
                    else:
                        valued_read = True
        else:
            slot = slot_of.pop(p, -1)
            if slot < 0:
                unmatched.append(pos)
                continue
            completions[slot] = op
            completion_at[slot] = pos
    looks = pairs_only and witness and not valued_read
    return _Pairs(invokes, completions, invoke_at, completion_at, unmatched, looks, pairs_only)


class OrphanCompletions(ValueError):
    """Completions with no invocation by their process before them: a malformed history.
    ``positions`` are their places in the history."""

    def __init__(self, positions: list[int]) -> None:
        super().__init__(
            f"malformed history: {len(positions)} completion(s) with no invocation by their "
            f"process before them (the first at position {positions[0]})"
        )
        self.positions = positions


def prepare(
    history: Sequence[Op],
    model: Model,
    *,
    independent: bool | None = None,
    refuse_orphans: bool = False,
) -> tuple[list[Partition], dict[str, Any]]:
    """Pair invokes with completions and split the ops by key into search-ready partitions.

    ``independent``: whether ``[k v]`` values are Jepsen's independent tuples. Keys are split
    only when asked: ``independent=True``, or a ``key`` field on the ops (the ``kv`` model's own
    syntax). None is False, except that a history that looks keyed (see :func:`_pair`) gets
    ``stats["note"]`` saying so and how to ask. Raises :class:`ValueError` when an op's ``f``
    or value makes no sense to ``model``; :class:`OrphanCompletions` (a ``ValueError``), when
    ``refuse_orphans``, if a completion has no invocation by its process (Jepsen's pairing drops
    it: ``stats["unmatched_completions"]`` counts them).
    """
    paired = _pair(history)
    if refuse_orphans and paired.unmatched:
        raise OrphanCompletions(paired.unmatched)
    note = ""
    if not independent:
        if independent is None and paired.looks_independent:
            note = KEYED_NOTE
        independent = False
    else:
        # _pair has looked at every value: the search for the culprit runs only when one is
        bad = None if paired.all_pairs else next(i for i in paired.invokes if not _is_pair(i.value))
        if bad is not None:
            raise ValueError(
                f"op {bad.index} has value {_show(bad.value)}, not an independent [key value] tuple"
            )
    fast = None
    if independent and model.register is not None and model.partition is None:
        fast = register_records(
            model.register, paired.invokes, paired.completions, paired.invoke_at,
            paired.completion_at, _NEVER,
        )  # fmt: skip
    records, dropped = fast if fast is not None else _records(paired, model, independent)
    parts, n_ops, n_determinate = _partitions(records)
    keep_until_exit(paired, records, parts)  # when the process is about to end (chaos.exits)
    stats: dict[str, Any] = {
        "ops": n_ops,
        "dropped": dropped,
        "indeterminate": n_ops - n_determinate,
        "unmatched_completions": len(paired.unmatched),
        "independent": independent,
        "keys": len(parts),
    }
    if note:
        stats["note"] = note
    return parts, stats


def _records(
    paired: _Pairs, model: Model, independent: bool
) -> tuple[dict[Any, list[tuple[Any, ...]]], int]:
    """Each op the search must place as a record in its key's list (the ops a model drops, a
    refused op, an indeterminate read counted apart as dropped).

    One pass over the pairs, with everything it touches in locals: at 100k ops every attribute
    lookup and call in this loop is a measurable share of the whole check. The columns are cut
    from the records at the end (:func:`_partitions`: in C, zip, slices, a sort with a C key)."""
    encode, is_read_only, partition = model.encode, model.read_only, model.partition
    info, fail, unknown = OpType.INFO, OpType.FAIL, UNKNOWN
    records: dict[Any, list[tuple[Any, ...]]] = {}
    dropped = 0
    for inv, comp, ipos, cpos in zip(
        paired.invokes, paired.completions, paired.invoke_at, paired.completion_at, strict=True
    ):
        if comp is None:
            typ = None
            v_out: JSONValue = None
        else:
            typ = comp.type
            if typ is info:
                typ = None
            elif typ is fail and comp.error is not None:
                # Failed with an error (refused, rejected): it did not run, observed nothing.
                dropped += 1
                continue
            v_out = comp.value
        v_in: JSONValue = inv.value
        if independent:
            key, v_in = v_in
            if v_out.__class__ in (list, tuple) and len(v_out) == 2:
                v_out = v_out[1]
        else:
            key = inv.extra.get("key", _NO_KEY) if inv.extra else _NO_KEY
        try:
            enc = encode(inv.f, v_in, v_out, typ)
        except (ValueError, TypeError) as e:  # UnknownOp is a ValueError
            raise _unencodable(inv, model, e) from None
        if enc is None:
            dropped += 1
            continue
        inp, out = enc
        determinate = out is not unknown
        read_only = is_read_only(inp, out)
        if not determinate and read_only:
            dropped += 1
            continue
        if key.__class__ is not int:
            key = freeze(key)
        if partition is not None:
            key = (key, partition(inp))
        recs = records.get(key)
        if recs is None:
            recs = records[key] = []
        # an indeterminate op has no return, even when an info completion is in the history
        recs.append(
            (inp, out, determinate, read_only, inv, comp, ipos, cpos if determinate else _NEVER)
        )
    return records, dropped


def _unencodable(inv: Op, model: Model, e: ValueError | TypeError) -> ValueError:
    """The error for an op ``model`` cannot encode, naming the op (apart from the loop of
    :func:`_records`: only a bad history gets here)."""
    if isinstance(e, UnknownOp):
        return ValueError(
            f"op {inv.index} has f={inv.f!r}, which the {model.name} model does not know"
        )
    return ValueError(f"op {inv.index}: {e}")


def _partitions(
    records: dict[Any, list[tuple[Any, ...]]],
) -> tuple[list[Partition], int, int]:
    """Each key's records cut into search-ready columns; with the count of ops and of
    determinate ones."""
    parts: list[Partition] = []
    n_ops = n_determinate = 0
    for key, recs in records.items():
        inputs, outputs, det, pure, invs, comps, calls, returns = map(list, zip(*recs, strict=True))
        n = len(recs)
        # node 2*i is op i's call, 2*i+1 its return; sorted by their places in the history,
        # where every missing return sorts last and is cut off
        place = [0] * (2 * n)
        place[::2] = calls
        place[1::2] = returns
        events = sorted(range(2 * n), key=place.__getitem__)
        k = sum(det)
        del events[n + k :]
        n_ops += n
        n_determinate += k
        parts.append(
            Partition(
                key=key,
                inputs=inputs,
                outputs=outputs,
                determinate=det,
                pure=pure,
                events=events,
                sources=list(zip(invs, comps, strict=True)),
            )
        )
    return parts, n_ops, n_determinate


# ---------------------------------------------------------------------- search


def _search(part: Partition, model: Model) -> Generator[int, None, _Outcome]:
    """Search one partition; yields its number of cached states every few thousand steps.

    Beyond Lowe's memoisation:

    * Forced moves. An op that never changes the state (a read, a cas that reported its compare
      failed) and can be linearized now is linearized now: any linearization that places it
      later can place it here (the states along the rest are the same, and it is already
      invoked). So if the configuration after it fails, the one before fails too.
    * Indeterminate ops last. Determinate ops live in one linked list with their returns;
      indeterminate ops (no return) in a second list, tried only after every determinate
      candidate, and never where they would leave the state as it is (the configuration
      without such an op can do all the one with it can).
    * Dominance. A configuration with the same determinate ops and state as one that failed,
      plus one more linearized indeterminate op, fails too: that op was optional and is still
      available to the failed one. Cut configurations count as failed, so whole chains of
      supersets go; trying indeterminate ops last makes the smaller sets fail first.
    """
    s = _setup(part, model)
    if s.counts[1] == 0:
        return _Outcome(True, 0, [])
    outcome = yield from _walk(s, part, model)
    if len(s.cache) >= _KEPT_CACHE:  # freeing a long key's cache at the end: a cost for naught
        keep_until_exit(s)  # (a short key's memory goes to the next key's search instead)
    return outcome


# a search frame: (call node, state, low, window, imask before it; forced; limit and blocking
# return in force when an indeterminate op was chosen)
_Frame = tuple[int, Any, int, int, int, bool, int, int]


@dataclass(slots=True)
class _Search:
    """One partition's search tables (see :func:`_setup`), built once per partition; the hot
    loop copies what it touches into locals."""

    head: int  # the determinate chain's head node; the indeterminate chain's is head + 2
    nxt: list[int]
    prv: list[int]
    rank: list[int]
    slot: list[int]
    det: list[bool]
    counts: list[int]  # [indeterminate ops, determinate ops]
    inputs: list[Input]
    outputs: list[object]
    step: Callable[[Any, Any, Any], tuple[bool, Any]]
    cache: set[tuple[int, int, int, Hashable]] = field(default_factory=set)
    failed: set[tuple[int, int, int, Hashable]] = field(default_factory=set)
    stack: list[_Frame] = field(default_factory=list)


def _setup(part: Partition, model: Model) -> _Search:
    """The linked lists, ranks and slots of one partition, built once before its search."""
    n = len(part.inputs)
    head, tail, ihead, itail = 2 * n, 2 * n + 1, 2 * n + 2, 2 * n + 3
    nxt = [0] * (2 * n + 4)
    prv = [0] * (2 * n + 4)
    det = part.determinate
    # rank: where a node sits in the history; a candidate call must come before the first
    # pending return. The tails rank after everything.
    rank = [0] * (2 * n + 4)
    for i, node in enumerate(part.events):
        rank[node] = i
    rank[tail] = len(part.events)
    rank[itail] = len(part.events) + 1
    main = [head] + [e for e in part.events if det[e >> 1]] + [tail]
    optional = [ihead] + [e for e in part.events if not det[e >> 1]] + [itail]
    for chain in (main, optional):
        for a, b in pairwise(chain):
            nxt[a] = b
            prv[b] = a
    # Determinate and indeterminate ops are numbered apart (slot), each in invocation order.
    # Every determinate op below ``low`` is linearized, so the determinate set is kept as
    # ``(low, mask >> low)``: a window of the ops in flight rather than a bitmask as long as
    # the history, which keeps cache keys small (and their memory bounded) on long histories.
    # Indeterminate ops, few and maybe never linearized, keep a plain mask.
    slot = [0] * n
    counts = [0, 0]
    for op in range(n):
        slot[op] = counts[det[op]]
        counts[det[op]] += 1
    return _Search(head, nxt, prv, rank, slot, det, counts, part.inputs, part.outputs, model.step)


def _walk(s: _Search, part: Partition, model: Model) -> Generator[int, None, _Outcome]:
    """The search loop of :func:`_search`, all it touches in locals (it runs once a candidate)."""
    nxt, prv, rank, det, slot = s.nxt, s.prv, s.rank, s.det, s.slot
    inputs, outputs, pure, step = s.inputs, s.outputs, part.pure, model.step
    cache, stack, head, tail, optional = s.cache, s.stack, s.head, s.head + 1, _optional(s)
    add, push, pop, cut = cache.add, stack.append, stack.pop, s.failed if s.counts[0] else None
    state, low, window, imask, limit, blocking, blocked = model.init, 0, 0, 0, 0, -1, -1
    # the longest prefix, apart from the stack: equal to it below ``kept`` (its lowest depth since)
    longest: list[int] = []  # so a longer one copies only the new frames (a full copy: quadratic)
    entry, optional_phase, at_block, budget, kept = nxt[head], False, state, _SLICE, 0
    while True:
        if optional_phase or entry & 1:
            if not optional_phase:  # the first pending return: its op goes before it; first
                limit, blocking, entry = rank[entry], entry, nxt[head + 2]  # the optional ops
            if rank[entry] < limit and (
                moved := optional(entry, limit, blocking, state, low, window, imask)
            ):
                state, imask, optional_phase, entry = moved[0], moved[1], False, nxt[head]
            else:  # a dead end: back up, past forced moves, to the last free choice
                if len(stack) > len(longest) or blocked < 0:
                    del longest[kept:]
                    longest += [e[0] >> 1 for e in stack[kept:]]
                    kept, blocked, at_block = len(stack), blocking >> 1, state
                while stack:
                    if cut is not None:  # a configuration left has failed (dominance)
                        cut.add((low, window, imask, state))
                    entry, state, low, window, imask, forced, limit, blocking = pop()
                    if det[entry >> 1]:
                        nxt[prv[entry | 1]] = prv[nxt[entry | 1]] = entry | 1
                    nxt[prv[entry]] = prv[nxt[entry]] = entry
                    if not forced:
                        break
                else:
                    return _Outcome(False, len(cache), longest, blocked, at_block)
                kept = min(kept, len(stack))
                optional_phase, entry = not det[entry >> 1], nxt[entry]
        else:
            ok, new = step(state, inputs[op := entry >> 1], outputs[op])
            if ok:
                new_low, new_window = low, window | (1 << (b := slot[op] - low))
                if not b:  # the lowest pending op: slide the window past the done ones
                    shift = (~new_window & (new_window + 1)).bit_length() - 1
                    new_window, new_low = new_window >> shift, low + shift
                key = (new_low, new_window, imask, new)
                ok = key not in cache
            if not ok:  # not a legal step, or a configuration seen before
                entry = nxt[entry]
                continue
            add(key)
            push((entry, state, low, window, imask, pure[op], 0, -1))
            state, low, window = new, new_low, new_window
            nxt[prv[entry]], prv[nxt[entry]] = nxt[entry], prv[entry]
            nxt[prv[entry | 1]], prv[nxt[entry | 1]] = nxt[entry | 1], prv[entry | 1]
            entry = nxt[head]
            if entry == tail:  # every determinate op is linearized
                return _Outcome(True, len(cache), [e[0] >> 1 for e in stack])
        budget -= 1
        if not budget:
            budget = _SLICE
            yield len(cache)


def _optional(s: _Search) -> Callable[[int, int, int, Any, int, int, int], tuple[Any, int] | None]:
    """The step that tries indeterminate candidates, as a closure over the search's tables:
    called once per blocking return, it finds them in cells rather than attributes."""
    nxt, prv, slot, cache, failed = s.nxt, s.prv, s.slot, s.cache, s.failed
    rank, inputs, outputs, step, push = s.rank, s.inputs, s.outputs, s.step, s.stack.append

    def linearize(
        entry: int, limit: int, blocking: int, state: object, low: int, window: int, imask: int
    ) -> tuple[Any, int] | None:
        """Linearize the first indeterminate op from ``entry`` on, invoked before the blocking
        return's ``limit``, that changes the state, is new and is not dominated (see
        :func:`_search`); its state and imask after, or None if there is none."""
        while rank[entry] < limit:
            op = entry >> 1
            ok, new = step(state, inputs[op], outputs[op])
            if not ok or new is state or new == state:
                entry = nxt[entry]
                continue
            new_imask = imask | (1 << slot[op])
            key = (low, window, new_imask, new)
            if key in cache:
                entry = nxt[entry]
                continue
            cache.add(key)
            rest = new_imask
            while rest:
                bit = rest & -rest
                if (low, window, new_imask ^ bit, new) in failed:
                    break
                rest ^= bit
            if rest:
                failed.add(key)
                entry = nxt[entry]
                continue
            push((entry, state, low, window, imask, False, limit, blocking))
            a, b = prv[entry], nxt[entry]
            nxt[a], prv[b] = b, a
            return new, new_imask
        return None

    return linearize


@dataclass(slots=True, kw_only=True)
class PartitionsResult:
    verdict: Verdict
    states: int
    seconds: float
    failed: Partition | None = None
    outcome: _Outcome | None = None
    reason: str = ""


def check_partitions(
    parts: Sequence[Partition],
    model: Model,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    max_states: int | None = DEFAULT_MAX_STATES,
    clock: Callable[[], float] = time.monotonic,
) -> PartitionsResult:
    """Search every partition, interleaved; stop at the first illegal one or at the budget."""
    t0 = clock()
    # Small keys first: with interleaving that only changes which key finishes first.
    order = sorted(range(len(parts)), key=lambda i: len(parts[i].inputs))
    active: list[tuple[int, Generator[int, None, _Outcome]]] = [
        (i, _search(parts[i], model)) for i in order
    ]
    sizes = dict.fromkeys(range(len(parts)), 0)
    finished_states = 0
    while active:
        still: list[tuple[int, Generator[int, None, _Outcome]]] = []
        for i, gen in active:
            try:
                sizes[i] = next(gen)
            except StopIteration as stop:
                outcome: _Outcome = stop.value
                sizes[i] = 0
                finished_states += outcome.states
                if not outcome.legal:
                    for _, g in still:
                        g.close()
                    states = finished_states + sum(sizes.values())
                    return PartitionsResult(
                        verdict=Verdict.INVALID,
                        states=states,
                        seconds=clock() - t0,
                        failed=parts[i],
                        outcome=outcome,
                    )
                continue
            still.append((i, gen))
            states = finished_states + sum(sizes.values())
            reason = ""
            if max_states is not None and states > max_states:
                reason = f"explored more than {max_states} states"
            elif time_limit is not None and clock() - t0 > time_limit:
                reason = f"ran out of time ({time_limit:g} s)"
            if reason:
                for _, g in active:
                    g.close()
                return PartitionsResult(
                    verdict=Verdict.UNKNOWN,
                    states=states,
                    seconds=clock() - t0,
                    reason=reason,
                )
        active = still
    return PartitionsResult(verdict=Verdict.VALID, states=finished_states, seconds=clock() - t0)


# ---------------------------------------------------------------------- evidence


def _op_evidence(part: Partition, model: Model, i: int) -> dict[str, Any]:
    d: dict[str, Any] = {"op": model.describe(part.inputs[i], part.outputs[i])}
    if part.sources is not None:
        inv, comp = part.sources[i]
        d["process"] = inv.process
        d["invoke_index"] = inv.index
        d["completion_index"] = comp.index if comp is not None else None
        d["type"] = comp.type.value if comp is not None else "info"
    return d


def _failure(part: Partition, model: Model, outcome: _Outcome) -> dict[str, Any]:
    prefix = outcome.longest
    shown = prefix[-PREFIX_SHOWN:]
    blocked = _op_evidence(part, model, outcome.blocked)
    return {
        "type": "nonlinearizable",
        "key": thaw(part.key),
        "op": blocked,
        "state": _show(outcome.state),
        "prefix_length": len(prefix),
        "prefix_truncated": len(shown) < len(prefix),
        "prefix": [_op_evidence(part, model, i) for i in shown],
        "cannot_follow": [
            _op_evidence(part, model, i) for i in _cannot_follow(part, model, outcome)
        ],
    }


def _cannot_follow(part: Partition, model: Model, outcome: _Outcome) -> list[int]:
    """The ops that could come next after the longest prefix — called before the blocked op
    returned, not in the prefix — and that the model refuses in the state it reached (the
    blocked op among them, unless only an order of the others' would have let it follow)."""
    done = set(outcome.longest)
    stop = 2 * outcome.blocked + 1
    out: list[int] = []
    for e in part.events:
        if e == stop:
            break
        op = e >> 1
        if e & 1 or op in done or not part.determinate[op]:
            continue
        if not model.step(outcome.state, part.inputs[op], part.outputs[op])[0]:
            out.append(op)
    return out


_PRECHECK_WHY = {
    "never-written": "observed {v}, which no write or cas could have written",
    "read-before-write": "observed {v} before any op that could write it was invoked",
}


def _precheck(parts: Sequence[Partition], m: Model, stats: dict[str, Any]) -> CheckResult | None:
    """INVALID at once when the linear pre-pass (:mod:`chaos.checkers.register_precheck`)
    finds an op no linearization can place; None leaves the history to the search."""
    for part in parts:
        found = precheck_register(part.inputs, part.outputs, part.events, m)
        if found is None:
            continue
        i, kind, v = found
        op = _op_evidence(part, m, i)
        why = _PRECHECK_WHY[kind].format(v=_show(v))
        evidence = {
            "type": "nonlinearizable",
            "key": thaw(part.key),
            "op": op,
            "reason": kind,
            "explanation": why,
            "decided_by": "pre-pass",
            "state": None,
            "prefix_length": 0,
            "prefix_truncated": False,
            "prefix": [],
        }
        where = "" if part.key is None else f" on key {_show(part.key)}"
        at = f" (op {op['invoke_index']}, process {op['process']})" if "invoke_index" in op else ""
        return CheckResult(
            checker=f"linearizable-{m.name}",
            verdict=Verdict.INVALID,
            summary=f"not linearizable{where}: {op['op']}{at} {why} (decided before the search)",
            anomalies=[evidence],
            stats={**stats, "states": 0, "decided_by": "pre-pass"},
        )
    return None


def check_linearizable(
    history: Sequence[Op],
    model: Model | str,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    max_states: int | None = DEFAULT_MAX_STATES,
    independent: bool | None = None,
    empty: Verdict = Verdict.UNKNOWN,
    refuse_orphans: bool = False,
) -> CheckResult:
    """Is ``history`` linearizable with respect to ``model``? A pure function of the history.

    ``model`` is a :class:`Model` or a name in :data:`chaos.checkers.models.MODELS`.
    ``time_limit`` (seconds) and ``max_states`` (memoised configurations, about 200 bytes each)
    bound the search; hitting either gives ``unknown``. ``independent`` as in :func:`prepare`.
    ``refuse_orphans``: a completion with no invocation makes the history uncheckable (the
    result says ``cannot check: malformed history ...`` and ``stats["orphans"]`` holds their
    positions) instead of being dropped. ``empty`` is the verdict when no op is left to linearize: ``unknown`` (the history decides
    nothing; what a run's checkers want) or ``valid`` (Knossos and Porcupine: the empty
    linearization is one), with the summary saying so either way.
    """
    m = MODELS[model]() if isinstance(model, str) else model
    name = f"linearizable-{m.name}"
    try:
        parts, stats = prepare(history, m, independent=independent, refuse_orphans=refuse_orphans)
    except OrphanCompletions as e:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"cannot check: {e}",
            stats={"orphans": e.positions},
        )
    except ValueError as e:
        return CheckResult(checker=name, verdict=Verdict.UNKNOWN, summary=f"cannot check: {e}")
    if m.name in REGISTER_MODELS:
        early = _precheck(parts, m, stats)
        if early is not None:
            return early
    res = check_partitions(parts, m, time_limit=time_limit, max_states=max_states)
    stats = {**stats, "states": res.states, "seconds": round(res.seconds, 4)}
    if res.verdict is Verdict.VALID:
        return _linearized(name, stats, len(parts), empty)
    if res.verdict is Verdict.UNKNOWN:
        return CheckResult(
            checker=name,
            verdict=Verdict.UNKNOWN,
            summary=f"gave up: {res.reason} before deciding",
            stats=stats,
        )
    return _not_linearized(name, res, m, stats)


def _linearized(name: str, stats: dict[str, Any], keys: int, empty: Verdict) -> CheckResult:
    """A search that linearized every key; ``empty``: the verdict when there was nothing to."""
    if stats["ops"] == 0:
        why = (
            "valid as Knossos and Porcupine say (the empty order is a linearization)"
            if empty is Verdict.VALID
            else "unknown: the history decides nothing"
        )
        return CheckResult(
            checker=name,
            verdict=empty,
            summary=f"nothing to linearize (no client op left to check): {why}",
            stats={**stats, "empty": True},
        )
    summary = f"linearizable: {stats['ops']} ops over {keys} key(s)"
    return CheckResult(checker=name, verdict=Verdict.VALID, summary=summary, stats=stats)


def _not_linearized(
    name: str, res: PartitionsResult, m: Model, stats: dict[str, Any]
) -> CheckResult:
    """A search that found an op no order can place: the longest prefix and that op."""
    assert res.failed is not None and res.outcome is not None
    evidence = _failure(res.failed, m, res.outcome)
    where = "" if res.failed.key is None else f" on key {_show(res.failed.key)}"
    op = evidence["op"]
    at = f" (op {op['invoke_index']}, process {op['process']})" if "invoke_index" in op else ""
    summary = (
        f"not linearizable{where}: {op['op']}{at} cannot be linearized after the "
        f"longest linearizable prefix of {evidence['prefix_length']} ops"
    )
    return CheckResult(
        checker=name, verdict=Verdict.INVALID, summary=summary, anomalies=[evidence], stats=stats
    )
