"""``chaos explore``: crash-point exploration of the code under test's own transactions.

Random schedules rarely land a fault *between* two transactions of a solution, where "two
transactions that should be one" bugs live. Crash-consistency tools for file systems enumerate the
crash points instead; this does the same for a lab solution:

1. a fault-free run records which transactions each function of the solution makes (the ``txn``
   events of chaos.node.store: ``complete`` made transactions 1 and 2);
2. every point — function, transaction, before/after — is tried with a kill, a pause (the
   workload's default fault duration, past its takeover wait), two kills (a fault that makes
   a retry, then one in the retry; with one unit of work, so both hit it), a brief pause (0.6 x
   the takeover wait: the others go on, a held read goes stale) and a pause until the
   workload's rival takes the work over (then let go at once), each as a trigger, plus
   each one-shot fault point the workload declares; one run each, seeded from the explore's seed;
3. it stops at the first invalid run unless asked for all, within a budget of runs, and reports
   coverage: which points were reached (the trigger fired) and what each run said.

The trace is the service's word, used only to choose where to aim; every verdict rests on the
runs' own checkers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import Verdict
from chaos.cluster.base import Backend
from chaos.core.capabilities import FaultPoints, Scenarios, TxnPoints, takeover_seconds
from chaos.core.spec import TestSpec
from chaos.core.workload import Workload
from chaos.exits import Exit
from chaos.histories.ops import Op
from chaos.histories.safe_text import shortened
from chaos.histories.store import load_run
from chaos.orchestrator.run import RunOutcome, run_test
from chaos.report.loading import REPORT_NAME
from chaos.run_option import SEED_SPAN

# trigger faults tried at every transaction point: (label, phrase suffix)
FAULTS: tuple[tuple[str, str], ...] = (
    ("kill", ""),
    ("pause", ""),
    # the first kill's restart comes at once, so the second can land in the redelivery
    ("kill", " for 0.2s 2 times"),
    # a brief pause (BRIEF x the takeover wait): the others go on without a takeover, so a read held
    # back from its transaction goes stale (a lost update)
    ("pause", " for {brief}s"),
    # held until another process takes its work over (the workload's rival event), then let go
    # at once: the held step and its rival's race (a night guard off by one, check-then-act)
    ("pause", " until {rival}"),
)
BRIEF = 0.6
# a double kill runs with one unit of work (the workload's ``one_task`` options), so that the
# second kill lands in the retry of the work the first one interrupted, not in another unit's
# first attempt
DOUBLE = " for 0.2s 2 times"


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """One run to try: a trigger phrase, or a one-shot fault point."""

    label: str
    trigger: str | None = None
    point: str | None = None
    one_task: bool = False

    def apply(self, spec: TestSpec, seed: int, one_task: dict[str, str]) -> TestSpec:
        if self.trigger is not None and self.one_task:
            return dataclasses.replace(
                spec,
                seed=seed,
                nemesis=(),
                triggers=(self.trigger,),
                options={**spec.options, **one_task},
            )
        if self.trigger is not None:
            return dataclasses.replace(spec, seed=seed, nemesis=(), triggers=(self.trigger,))
        return dataclasses.replace(spec, seed=seed, nemesis=(self.point or "",), triggers=())


@dataclass(frozen=True, slots=True, kw_only=True)
class Tried:
    probe: Probe
    run_dir: Path
    verdict: Verdict
    reached: bool
    said: str  # the first invalid (else unknown) checker's summary, or ""


@dataclass(slots=True, kw_only=True)
class Exploration:
    trace_run: Path
    txns: dict[str, int]  # function -> most transactions one call made in the trace
    probes: list[Probe]
    tried: list[Tried] = dataclasses.field(default_factory=list)
    trace_verdict: Verdict = Verdict.VALID
    trace_said: str = ""

    @property
    def first_invalid(self) -> Tried | None:
        return next((t for t in self.tried if t.verdict is Verdict.INVALID), None)

    def coverage(self) -> tuple[int, int]:
        """(points reached, points tried)."""
        return sum(t.reached for t in self.tried), len(self.tried)

    def left(self) -> list[Probe]:
        """The points never tried: the budget, or the first invalid run, ended the search."""
        done = {t.probe.label for t in self.tried}
        return [p for p in self.probes if p.label not in done]

    def exit_status(self) -> Exit:
        """``chaos explore``'s answer: invalid (1) when a run was; else unknown (2) when the
        search ended before every point was tried (a search out of budget proves nothing about
        the rest), a point was never reached, or a run (the trace too) was unknown; valid (0)
        only when every point was tried and every run was valid."""
        if self.first_invalid is not None or self.trace_verdict is Verdict.INVALID:
            return Exit.INVALID
        reached, tried = self.coverage()
        if self.left() or reached < tried or self.trace_verdict is not Verdict.VALID:
            return Exit.UNKNOWN
        if any(t.verdict is not Verdict.VALID for t in self.tried):
            return Exit.UNKNOWN
        return Exit.VALID


def trace_txns(run_dir: Path) -> dict[str, int]:
    """Function -> the most transactions one call of it made, from a run's ``txn`` events."""
    out: dict[str, int] = {}
    for e in load_run(run_dir).events:
        if e.kind != "txn":
            continue
        fn, n = e.data.get("fn"), e.data.get("n")
        if isinstance(fn, str) and isinstance(n, int) and not isinstance(n, bool) and 0 < n < 100:
            out[fn] = max(out.get(fn, 0), n)
    return out


def probes(wl: Workload, txns: dict[str, int], brief: float = 1.2) -> list[Probe]:
    """Every point of the trace with every fault, then the workload's one-shot fault points."""
    out: list[Probe] = []
    functions = wl.txn_functions if isinstance(wl, TxnPoints) else {}
    rival = wl.rival if isinstance(wl, TxnPoints) else ""
    for fn in sorted(txns, key=lambda f: (list(functions).index(f) if f in functions else 99, f)):
        component = functions.get(fn)
        if component is None:
            continue
        for n in range(1, txns[fn] + 1):
            for moment in ("before", "after"):
                for fault, rest in FAULTS:
                    if "{rival}" in rest and not rival:
                        continue
                    tail = rest.format(brief=round(brief, 2), rival=rival)
                    phrase = f"{fault} {component} {moment} txn {n} of {fn}{tail}"
                    out.append(Probe(label=phrase, trigger=phrase, one_task=rest == DOUBLE))
    if isinstance(wl, FaultPoints):
        for point in wl.fault_points:
            out.append(Probe(label=f"fault point {point}", point=point))
    return out


def _reached(history: list[Op], probe: Probe) -> bool:
    """The orchestrator's own record says the fault was applied (a trigger op, a fired point)."""
    for op in history:
        trig = op.extra.get("trigger")
        if (
            probe.trigger is not None
            and isinstance(trig, dict)
            and str(trig.get("phrase", "")).strip() == probe.trigger
        ):
            return True
        if (
            probe.point is not None
            and op.f == f"heal-{probe.point}"
            and isinstance(op.value, dict)
            and op.value.get("fired_at") is not None
        ):
            return True
    return False


def _said(outcome: RunOutcome) -> str:
    for verdict in (Verdict.INVALID, Verdict.UNKNOWN):
        for r in outcome.results:
            if r.verdict is verdict:
                return f"{r.checker}: {r.summary}"
    return ""


def probe_seed(seed: int, label: str) -> int:
    """Each probe's seed, from the explore's seed and the probe alone: any run re-runs alone."""
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % SEED_SPAN + 1


def run_command(spec: TestSpec, extra: tuple[str, ...] = ()) -> str:
    """The ``chaos run`` command that makes one of the explore's runs again, alone."""
    return shlex.join(["chaos", "run", *spec.run_argv(), *extra])


def explore(
    spec: TestSpec,
    *,
    backend: Backend,
    store: Path,
    workload: Workload,
    budget: int,
    stop_at_first: bool = True,
    progress: Callable[[str], None] = lambda m: None,
    command: Callable[[TestSpec], str] = run_command,
) -> Exploration:
    """Trace ``spec``'s solution fault-free, then try every point (see the module docstring).

    Each run stores ``command(its spec)`` as the command that reproduces it: a ``chaos run`` with
    its own trigger and seed, not the explore that made it."""
    base = dataclasses.replace(spec, nemesis=(), triggers=(), schedule=None, scenario=None)
    progress("trace: one fault-free run to learn the solution's transactions")

    def run(one: TestSpec) -> RunOutcome:
        # every run gets its page, as a `chaos run` does: a valid run's page shows what the
        # fault did and how the system recovered (~2 s of a ~13 s run)
        return run_test(one, backend=backend, store=store, workload=workload,
                        command=command(one))  # fmt: skip

    traced = run(base)
    txns = trace_txns(traced.run_dir)
    found = Exploration(
        trace_run=traced.run_dir,
        txns=txns,
        probes=probes(workload, txns, BRIEF * takeover_seconds(workload, spec)),
    )
    found.trace_verdict, found.trace_said = traced.verdict, _said(traced)
    if traced.verdict is Verdict.INVALID and stop_at_first:
        return found
    scenarios = set(workload.scenarios) if isinstance(workload, Scenarios) else set()
    for probe in found.probes[: max(0, budget)]:
        seed = probe_seed(spec.seed, probe.label)
        one = dict(workload.one_task) if isinstance(workload, TxnPoints) else {}
        run_spec = probe.apply(base, seed, one)
        if probe.point in scenarios:
            run_spec = dataclasses.replace(run_spec, scenario=probe.point)
        progress(f"try {probe.label} (seed {seed})")
        outcome = run(run_spec)
        if outcome.interrupted:
            raise KeyboardInterrupt
        history = load_run(outcome.run_dir).history
        tried = Tried(
            probe=probe,
            run_dir=outcome.run_dir,
            verdict=outcome.verdict,
            reached=_reached(history, probe),
            said=_said(outcome),
        )
        found.tried.append(tried)
        progress(f"  {tried.verdict.value}{'' if tried.reached else ' (not reached)'}")
        if tried.verdict is Verdict.INVALID and stop_at_first:
            break
    return found


SAID_CHARS = 300


def summary_lines(found: Exploration) -> list[str]:
    """The explore's answer in lines: the trace, each run (a run not valid with its sentence and
    its page), the coverage."""
    calls = ", ".join(f"{fn}: {n} txn(s)" for fn, n in found.txns.items()) or "none"
    lines = [f"trace: {calls} ({found.trace_run})"]
    if found.trace_verdict is not Verdict.VALID:
        lines.append(
            f"  the fault-free run itself is {found.trace_verdict.value}: "
            f"{shortened(found.trace_said, SAID_CHARS)}"
        )
    lines.append(f"           report: {found.trace_run / REPORT_NAME}")
    for t in found.tried:
        note = "" if t.reached else " [not reached]"
        lines.append(f"  {t.verdict.value:<8}{t.probe.label}{note}  ({t.run_dir.name})")
        if t.verdict is not Verdict.VALID and t.said:
            lines.append(f"           {shortened(t.said, SAID_CHARS)}")
        lines.append(f"           report: {t.run_dir / REPORT_NAME}")
    reached, tried = found.coverage()
    left = found.left()
    lines.append(
        f"coverage: {reached} of {tried} tried point(s) reached; {len(found.probes)} point(s) "
        f"in all" + (f", {len(left)} not tried" if left else "")
    )
    return lines + _left_lines(found, left)


def _left_lines(found: Exploration, left: list[Probe]) -> list[str]:
    """The points not tried, each by name, and why: the search says what it did not prove."""
    if not left:
        return []
    why = (
        "the search stopped at the first invalid run (--keep-going tries the rest)"
        if found.first_invalid is not None or found.trace_verdict is Verdict.INVALID
        else f"the budget ended (--budget {len(found.probes)} tries every point)"
    )
    return [f"not tried, {why}:", *(f"  {p.label}" for p in left)]


def to_json(found: Exploration) -> dict[str, Any]:
    reached, _ = found.coverage()
    return {
        "trace_run": str(found.trace_run),
        "trace_verdict": found.trace_verdict.value,
        "txns": found.txns,
        "points": len(found.probes),
        "tried": [
            {
                "probe": t.probe.label,
                "run": str(t.run_dir),
                "verdict": t.verdict.value,
                "reached": t.reached,
                "said": t.said,
            }
            for t in found.tried
        ],
        "reached": reached,
        "first_invalid": found.first_invalid.probe.label if found.first_invalid else None,
        "not_tried": [p.label for p in found.left()],
    }
