"""What the commands print: progress lines on stderr, a run's results and verdict."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from chaos.histories.safe_text import clean

__all__ = ["VERDICT_COLOUR", "print_results", "progress"]

VERDICT_COLOUR = {"valid": "green", "invalid": "red", "unknown": "yellow"}


def progress(quiet: bool) -> Callable[[str], None]:
    """A progress line on stderr, with the seconds since the command started (none if quiet)."""
    t0 = time.monotonic()

    def say(msg: str) -> None:
        if not quiet:
            click.echo(click.style(f"[{time.monotonic() - t0:6.1f}s] ", dim=True) + msg, err=True)

    return say


def print_results(results: list[Any], verdict: Any, run_dir: Path | None = None) -> None:
    for r in results:
        colour = VERDICT_COLOUR[r.verdict.value]
        click.echo(
            f"  {click.style(r.verdict.value.upper().ljust(7), fg=colour)} "
            f"{clean(r.checker)}: {clean(r.summary)}"
        )
        for a in r.anomalies[:3]:
            steps = a.get("chain") or [] if isinstance(a, dict) else []
            if steps:
                click.echo(f"           task {clean(a.get('task_id'))}:")
                for s in steps:
                    during = f"   [{'; '.join(s['during'])}]" if s.get("during") else ""
                    click.echo(
                        f"             {s['time']:8.3f}s {clean(s['node']):>3} "
                        f"{clean(s['component']):<7} {clean(s['step'])}{clean(during)}"
                    )
    click.secho(f"verdict: {verdict.value}", fg=VERDICT_COLOUR[verdict.value], bold=True)
    if run_dir is not None:
        click.echo(f"stored in {run_dir}")
