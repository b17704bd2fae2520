"""``chaos grade``, ``chaos feedback`` and ``chaos grade-certs``: their options, handed to
chaos.grade (chaos.grade.start finds the lab, its matrix and controls; the grade runs there)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from chaos.cli.deprecation import old_name
from chaos.cli.errors import fail
from chaos.cli.helps import QUIET_HELP, SEED_HELP, LazyHelp, examples, gradable_help
from chaos.cli.options import click_type
from chaos.cli.output import progress
from chaos.cli.run import check_run_argv
from chaos.exits import Exit
from chaos.histories.safe_text import clean
from chaos.run_option import SECONDS, SEED

__all__ = ["feedback_command", "grade_certs", "grade_command"]


def _control_names(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if value.strip() == "none":
        return ()
    return tuple(n.strip() for n in value.split(",") if n.strip())


@click.command(
    "grade",
    epilog=examples(
        "chaos grade submissions/ --workload lab3 --repeats 5",
        "chaos grade submissions/ --workload lab1 --matrix grade.yaml --controls reference",
        "chaos grade submissions/ --workload lab3 --scheduler tls://grader0:8786 --certs tls/",
        "chaos grade --resume grades/2026-12-01-lab3",
    ),
)
@click.argument("submissions", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--workload", "lab", default=None, metavar="NAME", cls=LazyHelp, help_from=gradable_help
)
@old_name("--lab", new="--workload")
@click.option(
    "--matrix",
    "matrix_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The configurations (grade.yaml; default: the lab's own). See docs/grading.md.",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 1000),
    default=3,
    show_default=True,
    help="Runs of each submission under each configuration (1 to 1000).",
)
@click.option("--seed", type=click_type(SEED), default=None, help=SEED_HELP)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output folder (default: grades/<date>-<lab>).",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="A Dask scheduler (tls://host:8786, with --certs) whose workers run the runs; default: "
    "this machine.",
)
@click.option(
    "--certs",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="The folder `chaos grade-certs` made: TLS to the --scheduler with its client certificate.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow a plain tcp:// --scheduler (whoever reaches it runs code as root on the workers).",
)
@click.option(
    "--parallel",
    type=click.IntRange(1, 256),
    default=None,
    help="Concurrent runs on this machine (default: two a core, 1.5 GB each).",
)
@click.option(
    "--run-timeout",
    type=click_type(SECONDS),
    default=None,
    help="Seconds before a run is stopped (default: its time limit + recovery timeout + 180).",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="Go on with an interrupted grade in this folder; nothing finished is run again.",
)
@click.option(
    "--chaos-command",
    default=None,
    help="How workers start chaos, if not `python3 -m chaos.cli` (e.g. a venv's bin/chaos).",
)
@click.option(
    "--controls",
    default=None,
    metavar="NAMES",
    help="Only these shipped solutions as control rows, comma-separated (default: all of them; "
    "'none' for no control rows).",
)
@click.option(
    "--feedback",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also write a feedback pack per student into this folder (as `chaos feedback`).",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the matrix x submissions x repeats and an estimate of the time; run nothing.",
)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
def grade_command(
    submissions: Path | None,
    lab: str | None,
    matrix_file: Path | None,
    repeats: int,
    seed: int | None,
    out: Path | None,
    scheduler: str | None,
    certs: Path | None,
    insecure: bool,
    parallel: int | None,
    run_timeout: float | None,
    resume: Path | None,
    chaos_command: str | None,
    controls: str | None,
    feedback: Path | None,
    plan_only: bool,
    quiet: bool,
) -> None:
    """Grade every submission (a folder per student with its protocol.py) under a matrix of
    configurations, repeated, with the lab's shipped solutions as control rows."""
    from chaos.grade.start import GradeArgs, plan_grade, run_grade

    args = GradeArgs(
        submissions=submissions,
        lab=lab,
        matrix_file=matrix_file,
        repeats=repeats,
        seed=seed,
        out=out,
        scheduler=scheduler,
        parallel=parallel,
        run_timeout=run_timeout,
        resume=resume,
        chaos_command=tuple(shlex.split(chaos_command)) if chaos_command else None,
        controls=_control_names(controls),
        certs=certs,
        insecure=insecure,
        check_run=check_run_argv,
        feedback=feedback,
    )
    try:
        if plan_only:  # the plan is this command's output: said even with -q
            plan_grade(args, say=click.echo)
            return
        outcome = run_grade(args, say=progress(quiet))
    except ValueError as e:
        fail(clean(str(e)))
    except OSError as e:
        fail(f"{clean(str(e))}", Exit.ENVIRONMENT)
    for name, path in outcome.reports.items():
        click.echo(f"{name}: {path}")
    if outcome.interrupted:
        sys.exit(Exit.INTERRUPTED)


@click.command(
    "feedback",
    epilog=examples(
        "chaos feedback grades/2026-12-01-lab3",
        "chaos feedback grades/2026-12-01-lab3 --out handout/",
    ),
)
@click.argument("grade_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output folder (default: GRADE_DIR/feedback): a folder and a zip per student, and "
    "gradebook.csv.",
)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
def feedback_command(grade_dir: Path, out: Path | None, quiet: bool) -> None:
    """A feedback pack per student of a finished grade: a page of what failed, the anomaly that
    explains it, the command that reproduces it at home, the student's own runs (no other
    student's data, no path of the grading machine), zipped; with Gradescope's results.json
    and a gradebook CSV. See docs/grading.md."""
    from chaos.grade.feedback import PackLeak, write_feedback

    try:
        done = write_feedback(grade_dir, out or grade_dir / "feedback", progress(quiet))
    except PackLeak as e:
        fail(clean(str(e)), Exit.INTERNAL)
    except ValueError as e:
        fail(clean(str(e)))
    except OSError as e:
        fail(clean(str(e)), Exit.ENVIRONMENT)
    click.echo(f"{len(done.zips)} pack(s) in {done.out}; gradebook: {done.gradebook}")


@click.command(
    "grade-certs",
    epilog=examples(
        "chaos grade-certs tls/ --scheduler-host grader0",
        "chaos grade-certs tls/ --scheduler-host grader0 --scheduler-host 10.0.0.5 --days 30",
    ),
)
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--scheduler-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="The scheduler's host name or address, for its certificate (repeatable).",
)
@old_name("--host", new="--scheduler-host", multiple=True)
@click.option(
    "--days",
    type=click.IntRange(1, 3650),
    default=365,
    show_default=True,
    help="Days (1 to 3650) the certificates are valid.",
)
def grade_certs(folder: Path, hosts: tuple[str, ...], days: int) -> None:
    """TLS certificates for `chaos grade --scheduler tls://...`: a CA of the grade's own and a
    certificate for the scheduler, the workers and the client, in a new folder."""
    from chaos.grade import certs

    try:
        certs.make(folder, hosts=hosts, days=days)
    except (ValueError, OSError) as e:
        fail(clean(str(e)))
    d = shlex.quote(str(folder))
    click.echo(
        f"made {folder}/: ca.pem, scheduler/worker/client .pem and -key.pem (keys owner-only; "
        "ca-key.pem stays here)\n"
        f"scheduler: dask scheduler --port 8786 --tls-ca-file {d}/ca.pem "
        f"--tls-cert {d}/scheduler.pem --tls-key {d}/scheduler-key.pem\n"
        f"each worker: dask worker tls://SCHEDULER:8786 --resources runs=2 --tls-ca-file "
        f"{d}/ca.pem --tls-cert {d}/worker.pem --tls-key {d}/worker-key.pem\n"
        f"the grade: chaos grade SUBMISSIONS --workload LAB --scheduler tls://SCHEDULER:8786 --certs {d}"
    )
