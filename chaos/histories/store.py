"""The store: one folder per run with everything needed to re-check and re-render it offline.

Layout of ``store/<test>/<run-id>/``::

    spec.json         the resolved test spec (lab, solution, nemesis, seed, versions)
    history.jsonl     client and nemesis ops, appended live
    events.jsonl      what the services reported, merged and sorted at the end of the run
    final.json        the final state read after heal and recovery
    schedule.json     the resolved fault schedule (what the seed produced)
    results.json      checker results and the combined verdict
    lab-report.json   the lab's own report (lab3: the three scenarios' figures)
    logs/<node>/*.log process output collected from the nodes

``store/latest`` and ``store/<test>/latest`` point at the newest run.

This module is the one reader of that layout: :func:`load_run` (strict: ``chaos check``, the
orchestrator) and ``chaos.report.loading.load`` (lenient: a page also for a run that died early)
both read the JSON artefacts through :func:`load_artefact` and name the workload with
:func:`workload_of`, so what ``spec.json`` says is interpreted in one place.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from chaos.histories.files import read_input, read_regular, write_atomic
from chaos.histories.jsonl import LineProblem, read_events, read_history, read_raw_events
from chaos.histories.limits import MAX_INPUT_BYTES, InputError, input_guard
from chaos.histories.ops import Event, Op

DEFAULT_STORE = Path(os.environ.get("CHAOS_STORE", "store"))
# The files a stored run is made of: a folder holding none of them is not a run.
RUN_FILES = (
    "spec.json",
    "history.jsonl",
    "events.jsonl",
    "final.json",
    "results.json",
    "lab-report.json",
)


def new_run_dir(store: Path, test: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime())
    d = store / test / f"{stamp}-{secrets.token_hex(3)}"
    d.mkdir(parents=True)
    for link in (store / "latest", store / test / "latest"):
        # a name of this process's own: runs started in parallel must not trip over each other
        tmp = link.with_name(f".{link.name}.{os.getpid()}.{secrets.token_hex(4)}")
        tmp.symlink_to(d.resolve())
        os.replace(tmp, link)
    return d


def write_json(path: Path, obj: Any) -> None:
    """Write a JSON artefact durably and atomically: a reader sees the old file or the new one,
    never half of one, also after a crash (see :mod:`chaos.histories.files`)."""

    def dump(fh: BinaryIO) -> None:
        # streamed: final.json holds a record and journals of tens of MB, and the text of it
        # held whole (json.dumps with an indent) cost the orchestrator 60 MB more
        text = io.TextIOWrapper(fh, encoding="utf-8")
        json.dump(obj, text, indent=2, sort_keys=False, default=str)
        text.write("\n")
        text.flush()
        text.detach()

    write_atomic(path, dump)


def read_json(path: Path, default: Any = None) -> Any:
    if not path.exists():
        return default
    return json.loads(read_input(path, MAX_INPUT_BYTES))


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run loaded from disk. ``problems`` lists lines the readers had to skip."""

    path: Path
    spec: dict[str, Any]
    history: list[Op]
    events: list[Event]
    final: dict[str, Any]
    schedule: list[dict[str, Any]]
    problems: list[LineProblem]

    @property
    def workload(self) -> str:
        """The workload's name (``lab3``); runs stored before 0.2 call it ``lab``."""
        return workload_of(self.spec)


def workload_of(spec: dict[str, Any]) -> str:
    """The workload a stored ``spec.json`` names, from either its key or the pre-0.2 ``lab``."""
    return str(spec.get("workload") or spec.get("lab") or "")


def faults_of(spec: dict[str, Any]) -> str:
    """The faults a stored ``spec.json`` asked for, as one line: its ``--nemesis``, each
    ``--trigger`` phrase, its seed scenario, its schedule; ``""`` for a run without any.
    ``chaos ls``, ``chaos serve``'s index and the run's page all name a run's fault by this."""
    nemesis = spec.get("nemesis")
    parts = [",".join(map(str, nemesis)) if isinstance(nemesis, list) else str(nemesis or "")]
    triggers = spec.get("triggers")
    if isinstance(triggers, list):
        parts += [f"trigger '{t}'" for t in triggers]
    if spec.get("scenario"):
        parts.append(f"scenario {spec['scenario']}")
    if isinstance(spec.get("schedule"), dict | list):
        parts.append("schedule")
    return ", ".join(p for p in parts if p)


class NotARun(Exception):
    """A folder that is not a usable run; the message names the file (and line and field)."""


# What each JSON artefact of a run must be at its top level.
_ARTEFACT_TYPES: dict[str, type] = {
    "spec.json": dict,
    "final.json": dict,
    "schedule.json": list,
    "results.json": dict,
    "lab-report.json": dict,
}


def _regular(path: Path) -> bool:
    """Whether ``path`` exists; raises NotARun when it is there but not a regular file (a FIFO
    would block the reader forever, a link could name /dev/zero)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    except OSError as e:
        raise NotARun(f"{path}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise NotARun(f"{path}: not a regular file")
    if st.st_size > MAX_INPUT_BYTES:
        raise NotARun(str(InputError(path, f"{st.st_size} bytes, more than chaos reads")))
    return True


def load_artefact(path: Path, default: Any) -> Any:
    """A run's JSON artefact (``spec.json``, ``final.json``, ``schedule.json``), or ``default``
    when it is absent; anything unusable raises :class:`NotARun` naming file, line and field."""
    if not _regular(path):
        return default
    try:
        # opened without following a link and checked again on the open file: the report's
        # server reads runs a student can still change (a FIFO swapped in would hang a thread)
        data = read_regular(path, MAX_INPUT_BYTES)
    except OSError as e:
        raise NotARun(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        with input_guard(path):
            try:
                obj = json.loads(data)
            except json.JSONDecodeError as e:
                raise InputError(
                    path, f"not JSON ({e.msg}, column {e.colno})", line=e.lineno
                ) from None
    except InputError as e:
        raise NotARun(str(e)) from None
    want = _ARTEFACT_TYPES.get(path.name)
    if want is not None and not isinstance(obj, want):
        what = "an object" if want is dict else "a list"
        raise NotARun(str(InputError(path, f"expected {what}, got {type(obj).__name__}", line=1)))
    return obj


def read_artefact(path: Path, problems: list[str]) -> Any:
    """:func:`load_artefact`, leniently: None when the file is absent or unusable, and then the
    reason, naming the file, appended to ``problems`` (a report shows what it could not read)."""
    try:
        return load_artefact(path, None)
    except NotARun as e:
        why = str(e).removeprefix(str(path)).lstrip(":0123456789 ") or str(e)
        problems.append(f"{path.name}: unreadable ({why})")
        return None


def stored_runs(store: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every run under ``store`` (``STORE/WORKLOAD/RUN``, not the ``latest`` links), newest
    first, with its spec read as ``chaos report`` and ``chaos check`` read it: a listing goes on
    past a run it cannot read, which is ``{"status": "unreadable"}``."""
    runs = sorted(
        (p for p in store.glob("*/*") if (p / "spec.json").exists() and not p.is_symlink()),
        key=lambda p: p.name,
        reverse=True,
    )
    for p in runs:
        spec = read_artefact(p / "spec.json", [])
        yield p, spec if isinstance(spec, dict) else {"status": "unreadable"}


def load_run(path: Path) -> StoredRun:
    path = path.resolve() if path.is_symlink() else path
    hist = path / "history.jsonl"
    if not path.is_dir() or not _regular(hist):
        raise NotARun(f"{path} is not a stored run (no history.jsonl in it)")
    spec = load_artefact(path / "spec.json", {})
    final = load_artefact(path / "final.json", {})
    schedule = load_artefact(path / "schedule.json", [])
    origin = spec.get("origin_mono")
    if origin is not None and (isinstance(origin, bool) or not isinstance(origin, int | float)):
        raise NotARun(
            str(InputError(path / "spec.json", "not a number", field="origin_mono", line=1))
        )
    with input_guard(hist):
        h = read_history(hist)
    ev_path = path / "events.jsonl"
    raw = path / "live" / "events"
    e = None
    if _regular(ev_path):
        with input_guard(ev_path):
            e = read_events(ev_path)
    elif raw.is_dir() and not raw.is_symlink() and origin is not None:
        with input_guard(raw):
            e = read_raw_events(raw, float(origin))
    return StoredRun(
        path=path,
        spec=spec,
        history=h.records,
        events=sorted(e.records, key=lambda x: x.time) if e else [],
        final=final,
        schedule=schedule,
        problems=h.problems + (e.problems if e else []),
    )
