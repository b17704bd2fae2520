"""What a workload adds to its runs' report pages: the section-contributor contract.

The page itself is generic — verdict, checkers, anomalies with their sequence diagrams, timeline,
faults, plots, final state, parameters — and never asks which lab a run belongs to. A workload
with a story of its own to tell (lab1's unsafe lease, lab3's lab-report table) hands the page a
:class:`SectionContributor`; ``render(run_dir, contributors=...)`` places what it returns among the
generic sections. ``chaos report`` and ``chaos serve`` find the contributors of a run through its
workload (``ContributorsFor``: the workload the loaded run names, to its contributors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from chaos.report.loading import RunData

__all__ = ["GENERIC_ORDER", "ContributorsFor", "Section", "SectionContributor", "no_contributors"]

# The generic sections' ids, in page order; a contributed section names the one it follows.
GENERIC_ORDER = (
    "checkers",
    "anomalies",
    "normal",
    "timeline",
    "faults",
    "plots",
    "excerpt",
    "final",
    "params",
    "problems",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One section of the page. ``html`` is a finished fragment: everything taken from the run is
    already escaped (``chaos.report.html.e``). ``after`` is the id of the generic section it
    follows (one of :data:`GENERIC_ORDER`), whether or not that one is shown for this run."""

    id: str
    title: str
    html: str
    after: str = "plots"


class SectionContributor(Protocol):
    """A workload's own sections of its runs' pages.

    Must:

    * build its sections from the loaded run only — ``run.results`` (what the checkers concluded,
      with their evidence), ``run.lab_report``, ``run.events``, ``run.spec``, ... — so that a
      stored run re-renders offline, without Docker;
    * return no section (an empty sequence) when the run lacks what it tells, and a section whose
      text says so when a file it needs is missing;
    * escape everything it takes from the run: stored files are data, not markup.

    Must not:

    * work out a fact a checker works out (a verdict, an anomaly, a story of what happened): it
      renders the checker's result, so the page and ``results.json`` never disagree;
    * talk to the cluster, write into the run folder, or mutate ``run``.

    A contributor that raises costs the page that contributor's sections only: the page shows a
    note in their place.
    """

    def expected_files(self) -> Mapping[str, str]:
        """Files of the run folder this workload's runs should have, beyond the generic ones,
        each with what the page loses without it (``{"lab-report.json": "no lab report
        table"}``): a missing one is listed under the verdict."""
        ...

    def sections(self, run: RunData) -> Sequence[Section]:
        """This run's sections, in the order they should appear."""
        ...


ContributorsFor = Callable[[str], Sequence[SectionContributor]]


def no_contributors(_name: str) -> Sequence[SectionContributor]:
    """The lookup of a page with generic sections only."""
    return ()
