"""What ``chaos grade`` does between its options and :func:`chaos.grade.session.grade`: find the
lab, its matrix and controls, the out folder, the seed, or read them back for ``--resume``."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.core.capabilities import Gradable, WorkloadOptions
from chaos.grade import certs, dispatch, estimate, feedback, ledger, matrix, submissions
from chaos.grade.session import GradeOutcome, GradeRequest, grade, rows_of
from chaos.run_option import new_seed
from chaos.workloads import registry


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeArgs:
    submissions: Path | None
    lab: str | None
    matrix_file: Path | None = None
    repeats: int = 3
    seed: int | None = None
    out: Path | None = None
    scheduler: str | None = None
    parallel: int | None = None
    run_timeout: float | None = None
    resume: Path | None = None
    chaos_command: tuple[str, ...] | None = None
    controls: tuple[str, ...] | None = None  # None: all the lab's shipped solutions
    certs: Path | None = None  # the folder `chaos grade-certs` filled: TLS to the scheduler
    insecure: bool = False  # a plain tcp:// scheduler, knowingly
    feedback: Path | None = None  # a feedback pack per student, written here after the grade
    # `chaos run`'s own check of its arguments (ValueError naming the option): each configuration
    # of the matrix goes through it before anything is written, so a value every run would refuse
    # (tasks: 0) stops the grade, not every cell of it
    check_run: Callable[[list[str]], None] | None = None


# Dask addresses that are TLS; anything else (tcp://, a bare host:port, ws://) is plain
TLS_SCHEMES = ("tls", "wss")


def scheduler_security(args: GradeArgs, say: Callable[[str], None]) -> Any:
    """The client's ``Security`` for ``--scheduler``, or None; ValueError for a plain scheduler
    without ``--insecure`` (Dask runs whatever a connected client submits, and a worker runs
    chaos as root: a scheduler open to the network is root on every worker)."""
    if args.scheduler is None:
        if args.certs is not None or args.insecure:
            raise ValueError(
                "--certs and --insecure go with --scheduler (the local cluster listens on "
                "127.0.0.1 only)"
            )
        return None
    scheme = args.scheduler.split("://", 1)[0].lower() if "://" in args.scheduler else "tcp"
    if scheme in TLS_SCHEMES:
        if args.certs is None:
            raise ValueError(
                f"--scheduler {args.scheduler}: give --certs DIR, the folder `chaos grade-certs "
                "DIR` made (the client's certificate and the cluster's CA)"
            )
        return certs.client_security(args.certs)
    if args.certs is not None:
        raise ValueError(f"--certs: the scheduler {args.scheduler} is not tls://")
    if not args.insecure:
        raise ValueError(
            f"--scheduler {args.scheduler}: refused: a plain Dask scheduler runs whatever any "
            "client that reaches it submits, as root on every worker; use tls:// with "
            "certificates (`chaos grade-certs DIR`, then --certs DIR; see docs/grading.md), or "
            "add --insecure on a network only you can reach"
        )
    say(f"warning: {args.scheduler} is plain TCP (--insecure): whoever reaches it is root on "
        "the workers")  # fmt: skip
    return None


def gradable(lab: str) -> Gradable:
    """The lab's workload, if it can be graded (ValueError naming those that can)."""
    wl = registry.get(lab)
    if not isinstance(wl, Gradable):
        can = [n for n in registry.names() if isinstance(registry.get(n), Gradable)]
        raise ValueError(f"{lab} cannot be graded (no grade matrix); gradable: {', '.join(can)}")
    return wl


def request_of(args: GradeArgs, say: Callable[[str], None]) -> GradeRequest:
    if args.resume is not None:
        if args.submissions is not None or args.lab or args.matrix_file:
            raise ValueError(
                "--resume takes the grade's own settings: give no submissions, --workload, --matrix"
            )
        try:
            manifest = ledger.Ledger(args.resume).read_manifest()
            req = GradeRequest.from_json(manifest, args.resume)
        except (KeyError, TypeError) as e:
            raise ValueError(f"{args.resume / ledger.MANIFEST}: unreadable ({e})") from None
        say(f"resuming {args.resume} (seed {req.seed})")
        return req
    if args.submissions is None or not args.lab:
        raise ValueError("give a submissions folder and --workload (or --resume DIR)")
    wl = gradable(args.lab)
    # a workload that declares no options (a third party's, without the capability) checks its own
    declared = wl.options if isinstance(wl, WorkloadOptions) else None
    m = matrix.load(args.matrix_file or wl.grade_matrix, args.lab, declared)
    # every input checked before the out folder is: a grade refused for a bad input writes
    # nothing, so the corrected command is not then refused as "holds a grade already"
    submissions.discover(args.submissions)
    controls = _controls(args.controls, wl)
    if args.check_run is not None:
        _check_configs(m, args.lab, args.check_run)
    seed = args.seed if args.seed is not None else new_seed()
    if args.seed is None:
        say(f"grade seed {seed} (--seed {seed} grades the same way again)")
    out = args.out or Path("grades") / f"{time.strftime('%Y-%m-%d')}-{args.lab}"
    if (out / ledger.LEDGER).exists() or (out / ledger.MANIFEST).exists():
        raise ValueError(f"{out} holds a grade already: --resume {out}, or choose --out")
    return GradeRequest(
        lab=args.lab,
        submissions=args.submissions,
        matrix=m,
        repeats=args.repeats,
        seed=seed,
        out=out,
        run_timeout=args.run_timeout,
        chaos=args.chaos_command,
        controls=controls,
    )


def _check_configs(m: matrix.Matrix, lab: str, check: Callable[[list[str]], None]) -> None:
    for c in m.configs:
        try:
            check([lab, *c.argv()])
        except ValueError as e:
            raise ValueError(f"{m.source}: configuration {c.name}: {e}") from None


def _controls(names: tuple[str, ...] | None, wl: Gradable) -> tuple[str, ...] | None:
    """The control rows asked for, each one the lab ships (ValueError naming those it has)."""
    if names is None:
        return None
    unknown = sorted(set(names) - set(wl.grade_controls))
    if unknown:
        raise ValueError(
            f"--controls: no shipped solution {', '.join(unknown)}; "
            f"the lab's: {', '.join(wl.grade_controls)}"
        )
    return tuple(names)


def plan_grade(args: GradeArgs, say: Callable[[str], None]) -> estimate.Plan:
    """``chaos grade --plan``: every input checked as for a grade, then the matrix x rows x
    repeats and the estimate said; nothing is run and nothing is written."""
    req = request_of(args, say)
    wl = gradable(req.lab)
    rows = rows_of(req, wl.grade_controls)
    parallel = args.parallel or dispatch.default_parallel()
    for line in estimate.table(rows, req.matrix, req.repeats):
        say(line)
    done = (
        sum(1 for r in ledger.Ledger(req.out).finished().values() if r.graded)
        if (args.resume is not None)
        else 0
    )
    plan = estimate.plan_of(rows, req.matrix, req.repeats, parallel, done)
    for line in plan.lines():
        say(line)
    return plan


def run_grade(args: GradeArgs, say: Callable[[str], None]) -> GradeOutcome:
    security = scheduler_security(args, say)  # before anything is read or written
    if args.feedback is not None:
        feedback.check_out(args.feedback)
    req = request_of(args, say)
    if args.chaos_command and args.resume is not None:
        req = GradeRequest.from_json({**req.to_json(), "chaos": list(args.chaos_command)}, req.out)
    wl = gradable(req.lab)
    parallel = args.parallel or dispatch.default_parallel()
    where = args.scheduler or f"this machine, {parallel} run(s) at a time"
    say(f"grading {req.lab}: {len(req.matrix.configs)} configuration(s) x {req.repeats} on {where}")
    # A grade started in the background by a non-interactive shell (`nohup chaos grade … &`)
    # inherits SIGINT ignored, and Python then installs no handler: `kill -INT` must still stop
    # it cleanly (runs healed, the ledger kept for --resume), as Ctrl-C does in a terminal.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    outcome = grade(
        req,
        controls=wl.grade_controls,
        scheduler=args.scheduler,
        parallel=parallel,
        progress=say,
        security=security,
    )
    if args.feedback is not None and not outcome.interrupted:
        done = feedback.write_feedback(outcome.out, args.feedback, say)
        outcome.reports["feedback"] = done.out
    return outcome
