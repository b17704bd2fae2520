"""``clock``: move the wall clock of service processes of the code under test, one by one.

Containers share the host kernel's clock, so this works per *process*, through libfaketime (see
chaos.core.clocks): the run preloads it into the code under test's processes, and this fault writes
each target's clock file. Only the lab services are reached — where leases are computed. etcd and
nats-server are Go binaries that read the clock without libc; they keep the true time (a target
spec that names them is refused for them, and the record says so).

``CLOCK_MONOTONIC`` stays true in every process: events keep lining up with the history, and code
that measures durations with it (``time.monotonic``, ``time.sleep``) does not notice the fault.

The spec is ``[mode[=amount]][:target]``, e.g. ``clock``, ``clock:skew``, ``clock:bump=-2``,
``clock:strobe:orders@n2``, ``clock:drift=1.5:n1``, ``clock:orders``:

- ``bump``    every target jumps by the same Δ (± up to 5 s drawn from the seed, or ``=Δ``);
- ``skew``    every target gets its own constant offset (drawn in ±5 s, or ``=Δ`` for all);
- ``strobe``  the clock flips between the true time and +Δ every 50 ms;
- ``drift``   the clock runs at rate r ≠ 1 (drawn in 0.5 to 0.8 or 1.25 to 2, or ``=r``), applied as an
              offset the fault advances every 50 ms;
- no mode: one of the four, drawn from the seed. The target defaults to ``one`` node (its service
  processes).

Heal writes ``+0`` to every target's file (and stops a strobe's or a drift's thread); the reaper's
``clock-reset`` op does the same for a dead run. Each target's offset (or amplitude, or rate) is in
the op values of the history, and the offset a probe measured through the same library and file.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.cluster import clocks
from chaos.cluster.node_kit.undo import UndoOp
from chaos.core.context import RunContext
from chaos.core.target import Resolved, RoleUnplayed, Target
from chaos.core.workload import Workload
from chaos.nemesis.targets import processes_of, resolve_targets

MODES = ("bump", "skew", "strobe", "drift")
MAX_OFFSET = 5.0  # seconds: beyond lab1's lockAtMostFor (3 s), so takeovers can happen
MIN_OFFSET = 0.5
STEP = 0.05  # seconds between two writes of a strobe or a drift
# a measured offset further than this from the commanded one means the library did not apply it
TOLERANCE = 0.05

# run inside the node with the target's clock environment: the wall clock read between two reads
# of the monotonic clock, which is the host's (not faked), so the host can tell the wall clock's
# offset; of 20 tries the tightest, since a try the process was descheduled in is off by as long
_PROBE = (
    "import time, json\n"
    "best = None\n"
    "for _ in range(20):\n"
    "    m1 = time.monotonic(); w = time.time(); m2 = time.monotonic()\n"
    "    if best is None or m2 - m1 < best[2] - best[1]:\n"
    "        best = (w, m1, m2)\n"
    "print(json.dumps([best[0], (best[1] + best[2]) / 2]))\n"
)


class Shifts:
    """The clock faults active on each file, so that overlapping faults add up and one's heal
    leaves another's offset in place: a file always holds the sum of its active shifts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_file: dict[Path, dict[int, float]] = {}

    def set(self, path: Path, key: int, offset: float | None) -> float:
        """Set (None: remove) fault ``key``'s shift of ``path``; writes and returns the total."""
        with self._lock:
            mine = self._by_file.setdefault(path, {})
            if offset is None:
                mine.pop(key, None)
            else:
                mine[key] = offset
            total = round(sum(mine.values()), 6)
            clocks.write_offset(path, total)
            return total

    def total(self, path: Path) -> float:
        with self._lock:
            return round(sum(self._by_file.get(path, {}).values()), 6)


def shifts_of(ctx: RunContext) -> Shifts:
    with _SHIFTS_LOCK:
        got = ctx.state.get("clock-shifts")
        if not isinstance(got, Shifts):
            got = ctx.state["clock-shifts"] = Shifts()
        return got


_SHIFTS_LOCK = threading.Lock()


class ClockError(RuntimeError):
    """A clock that cannot be moved (no such process, infrastructure, no libfaketime), or a probe
    that contradicts the commanded offset."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockSpec:
    mode: str | None
    amount: float | None
    target: str | None


def parse(spec: str | None) -> ClockSpec:
    """``skew=4:orders@n2`` -> (skew, 4.0, orders@n2); ``orders`` -> (None, None, orders)."""
    if not spec:
        return ClockSpec(mode=None, amount=None, target=None)
    head, _, rest = spec.partition(":")
    mode, _, amount = head.partition("=")
    if mode not in MODES:
        if amount:
            raise ValueError(f"clock {spec!r}: unknown mode {mode!r}; modes: {', '.join(MODES)}")
        return ClockSpec(mode=None, amount=None, target=spec)
    try:
        value = float(amount) if amount else None
    except ValueError:
        raise ValueError(f"clock {spec!r}: {amount!r} is not a number of seconds") from None
    if mode == "drift" and value is not None and (value <= 0 or value == 1):
        raise ValueError(f"clock {spec!r}: a drift rate must be positive and not 1")
    return ClockSpec(mode=mode, amount=value, target=rest or None)


def _offset(rng: random.Random, lo: float = MIN_OFFSET, hi: float = MAX_OFFSET) -> float:
    return round(rng.choice((-1, 1)) * rng.uniform(lo, hi), 3)


def draw(
    mode: str, amount: float | None, targets: list[Target], rng: random.Random
) -> dict[str, Any]:
    """The parameters of one clock fault: per-target offsets, or a strobe's Δ, or a drift's rate."""
    keys = [f"{t.node}/{t.process}" for t in targets]
    if mode == "bump":
        d = amount if amount is not None else _offset(rng)
        return {"mode": mode, "offsets": dict.fromkeys(keys, d)}
    if mode == "skew":
        if amount is not None:
            return {"mode": mode, "offsets": dict.fromkeys(keys, amount)}
        return {"mode": mode, "offsets": {k: _offset(rng) for k in keys}}
    if mode == "strobe":
        d = amount if amount is not None else _offset(rng)
        return {"mode": mode, "delta": d, "period": 2 * STEP}
    rate = amount if amount is not None else round(rng.choice((rng.uniform(0.5, 0.8),
                                                               rng.uniform(1.25, 2.0))), 3)  # fmt: skip
    return {"mode": mode, "rate": rate}


class ClockFault:
    """Moves the wall clocks of target processes; the undo puts them back to the true time."""

    name = "clock"

    def __init__(self, workload: Workload | None = None) -> None:
        self.workload = workload

    def resolve(self, ctx: RunContext, spec: str | None, rng: random.Random) -> Resolved:
        cs = parse(spec)
        mode = cs.mode or rng.choice(MODES)
        found = resolve_targets(ctx, self.workload, cs.target or "one", rng)
        if not found:
            raise RoleUnplayed(
                f"clock {spec or ''}: nobody plays {cs.target} right now (a role is whoever "
                "plays it when the fault starts)"
            )
        targets = [t for t in processes_of(ctx, found) if self._fakes(ctx, t)]
        if not targets:
            raise ClockError(
                f"clock {spec or ''}: no process of the code under test there (etcd and "
                "nats-server are Go binaries that read the clock without libc: not reachable)"
            )
        return Resolved(
            spec=spec or mode,
            targets=tuple(targets),
            params=draw(mode, cs.amount, targets, rng),
        )

    @staticmethod
    def _fakes(ctx: RunContext, t: Target) -> bool:
        return ctx.supervisor.clock_file(t.node, t.process or "") is not None

    def start(
        self,
        ctx: RunContext,
        resolved: Resolved,
        *,
        intent: dict[str, Any] | None = None,
        trigger: dict[str, Any] | None = None,
    ) -> int:
        params = resolved.params
        if not params:  # a trigger's target: no draw was made yet
            rng = ctx.rng_for(f"clock:{resolved.spec}")
            params = draw(rng.choice(MODES), None, list(resolved.targets), rng)
        files: dict[Target, Path] = {}
        for t in resolved.targets:
            path = ctx.supervisor.clock_file(t.node, t.process or "")
            if path is None:
                raise ClockError(f"clock: {t.process} on {t.node} does not read a faked clock")
            files[t] = path
        reap = [{"op": UndoOp.CLOCK_RESET, "files": sorted(str(p) for p in files.values())}]
        move = _ClockMove(self, ctx, files, params)
        return ctx.faults.start(
            "clock",
            move.apply,
            move.undo,
            intent=intent or {"target": resolved.spec, **params},
            trigger=trigger,
            extra={"reap": reap},
        )

    @staticmethod
    def _steady(ctx: RunContext, path: Path) -> bool:
        return not ctx.state.get("clock-moving", {}).get(path)

    def _measure(self, ctx: RunContext, t: Target, commanded: float) -> float | None:
        """The offset a process reading ``t``'s clock file sees now, through the same library;
        raises when it is further than TOLERANCE from the file's total. None: the backend has no
        processes to probe with (the in-memory cluster), or other clock faults kept changing the
        file while the probe ran (then there is nothing to compare with)."""
        shifts = shifts_of(ctx)
        path = ctx.supervisor.clock_file(t.node, t.process or "")
        env = clocks.process_env("/chaos", t.node, t.process or "")
        argv = ["env", *(f"{k}={v}" for k, v in env.items()), "python3", "-c", _PROBE]
        measured = None
        for _ in range(3):
            want = shifts.total(path) if path is not None else commanded
            base = clocks.wall_minus_monotonic()
            r = ctx.cluster.exec(t.node, argv, timeout=30)
            if not r.ok:
                raise ClockError(f"clock probe on {t.node} failed: {r.output.strip()[-300:]}")
            try:
                wall, mono = json.loads(r.output.strip().splitlines()[-1])
            except (ValueError, IndexError):
                return None
            # the true wall time at the probe's monotonic instant, from the host's own pair
            measured = round(float(wall) - (base + float(mono)), 4)
            if path is not None and shifts.total(path) != want:
                continue  # another fault's apply or heal moved the file meanwhile: again
            if abs(measured - want) > TOLERANCE:
                raise ClockError(
                    f"{t.process} on {t.node}: commanded {want:+.3f} s, a probe reading the same "
                    f"clock saw {measured:+.4f} s"
                )
            return measured
        return None


class _ClockMove:
    """One clock fault in force: the offset it commands on each target's clock file over time,
    and, for ``strobe`` and ``drift``, the thread that keeps moving them until the undo."""

    def __init__(
        self, fault: ClockFault, ctx: RunContext, files: dict[Target, Path], params: dict[str, Any]
    ) -> None:
        self.fault, self.ctx, self.files, self.params = fault, ctx, files, params
        self.mode = str(params["mode"])
        self.stop = threading.Event()
        self.shifts = shifts_of(ctx)
        self.key = id(self.stop)
        self.mover: list[threading.Thread] = []
        self.flips = 0

    def offset_of(self, t: Target, elapsed: float) -> float:
        params, mode = self.params, self.mode
        if mode in ("bump", "skew"):
            return float(params["offsets"][f"{t.node}/{t.process}"])
        if mode == "strobe":
            return float(params["delta"]) if int(elapsed / STEP) % 2 == 0 else 0.0
        return (float(params["rate"]) - 1.0) * elapsed

    def move(self, t0: float) -> None:
        last = 0  # apply wrote phase 0 (+Δ)
        while not self.stop.wait(STEP - (time.monotonic() - t0) % STEP):
            elapsed = time.monotonic() - t0
            for t, p in self.files.items():
                self.shifts.set(p, self.key, self.offset_of(t, elapsed))
            if self.mode == "strobe":
                phase = int(elapsed / STEP) % 2
                self.flips += phase != last
                last = phase

    def apply(self) -> list[dict[str, Any]]:
        ctx, mode, params = self.ctx, self.mode, self.params
        t0 = time.monotonic()
        out = []
        for t, p in self.files.items():
            commanded = self.offset_of(t, 0.0)
            total = self.shifts.set(p, self.key, commanded)
            rec: dict[str, Any] = {**t.to_json(), "mode": mode, "file": p.name}
            if mode in ("bump", "skew"):
                rec["offset"] = commanded
                if total != commanded:
                    rec["clock"] = total  # another clock fault on this process adds to it
                steady = self.fault._steady(ctx, p)
                rec["measured"] = self.fault._measure(ctx, t, total) if steady else None
            elif mode == "strobe":
                rec["delta"] = params["delta"]
                rec["period"] = params["period"]
            else:
                rec["rate"] = params["rate"]
            out.append(rec)
        if mode in ("strobe", "drift"):
            moving = ctx.state.setdefault("clock-moving", {})
            for p in self.files.values():
                moving[p] = moving.get(p, 0) + 1
            th = threading.Thread(target=self.move, args=(t0,), name="clock-mover", daemon=True)
            th.start()
            self.mover.append(th)
        return out

    def undo(self) -> list[dict[str, Any]]:
        ctx = self.ctx
        self.stop.set()
        for th in self.mover:
            th.join(5)
        if self.mover:
            moving = ctx.state.setdefault("clock-moving", {})
            for p in self.files.values():
                moving[p] = max(0, moving.get(p, 1) - 1)
            self.mover.clear()  # undo may run twice: count each mover out once
        out = []
        for t, p in self.files.items():
            total = self.shifts.set(p, self.key, None)
            rec: dict[str, Any] = {**t.to_json(), "mode": self.mode, "offset": 0.0}
            if total != 0.0:
                rec["clock"] = total  # what the faults still active on it add up to
            if self.mode == "strobe":
                rec["flips"] = self.flips
            # a strobe or drift still active on this file moves it under the probe's feet
            steady = self.fault._steady(ctx, p)
            rec["measured"] = self.fault._measure(ctx, t, total) if steady else None
            out.append(rec)
        return out
