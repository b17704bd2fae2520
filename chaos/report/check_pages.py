"""``chaos check FILE --model M --out DIR``: the evidence of a history file's check as pictures.

``DIR/index.html`` says each checker's verdict (and, for transactions, the models the anomalies
rule out) and links the pages written beside it: ``cycles.html`` with every cycle found drawn
(:func:`~chaos.report.cycle.cycle_svg`), each edge explained by the ops that order it and each
transaction's micro-ops, plus one ``cycle-N-TYPE.svg`` per cycle; ``linearization.html`` with
a failed linearizability check's longest linearizable prefix and the ops that cannot follow it
(:mod:`chaos.report.linearization`). Reads only the results' data; every text is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos.checkers.verdict import CheckResult
from chaos.report.cycle import cycle_svg
from chaos.report.html import e, table
from chaos.report.linearization import linearization_section

__all__ = ["write_check_pages"]

_STYLE = (
    "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left;font-size:13px}code{background:#f4f4f4}.allowed{color:#777}"
    "section{border-top:1px solid #ddd;margin-top:1.5em}"
)


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>{body}</body></html>\n"
    )


def _cycle_section(n: int, a: dict[str, Any], svg: str) -> str:
    txns = [
        [t.get("name", ""), t.get("index", ""), t.get("process", ""), t.get("type", ""),
         t.get("text", t.get("value", ""))]
        for t in a.get("txns", [])
        if isinstance(t, dict)
    ]  # fmt: skip
    steps = "".join(
        f"<li>{e(s.get('text', ''))}</li>" for s in a.get("steps", []) if isinstance(s, dict)
    )
    mark = "" if a.get("forbidden", True) else ' <span class="allowed">(allowed)</span>'
    return (
        f'<section id="cycle-{n}"><h2>{e(a.get("type", "cycle"))}{mark}</h2>'
        f"<p>{e(a.get('summary', ''))}</p>{svg}"
        + table(["", "completed (op)", "process", "type", "micro-ops"], txns)
        + f"<h3>Why each edge</h3><ol>{steps}</ol></section>"
    )


def _cycles(results: Sequence[CheckResult], out: Path) -> tuple[str, list[Path]] | None:
    sections: list[str] = []
    files: list[Path] = []
    for r in results:
        for a in r.anomalies:
            svg = cycle_svg(a)
            if svg is None:
                continue
            n = len(sections) + 1
            f = out / f"cycle-{n}-{re.sub(r'[^A-Za-z0-9-]', '_', str(a.get('type')))}.svg"
            f.write_text(svg + "\n")
            files.append(f)
            sections.append(_cycle_section(n, a, svg))
    if not sections:
        return None
    page = out / "cycles.html"
    page.write_text(_page(f"{len(sections)} cycle(s)", "".join(sections)))
    return page.name, [page, *files]


def _linearization(results: Sequence[CheckResult], out: Path) -> Path | None:
    found = [a for r in results for a in r.anomalies if a.get("type") == "nonlinearizable"]
    if not found:
        return None
    page = out / "linearization.html"
    page.write_text(
        _page("A failed linearization", "".join(linearization_section(a) for a in found))
    )
    return page


def _index(results: Sequence[CheckResult], source: Path, links: list[str]) -> str:
    rows = []
    for r in results:
        also = ""
        if r.stats.get("not") or r.stats.get("also_not"):
            also = f"not {', '.join(r.stats.get('not', []))}; also not " + ", ".join(
                r.stats.get("also_not", [])
            )
        rows.append([r.checker, r.verdict.value, r.summary, also])
    body = f"<p>History: <code>{e(source)}</code></p>" + table(
        ["checker", "verdict", "summary", "rules out"], rows
    )
    if links:
        body += "<ul>" + "".join(f'<li><a href="{e(h)}">{e(h)}</a></li>' for h in links) + "</ul>"
    else:
        body += "<p>No cycle and no failed linearization to draw.</p>"
    return _page("chaos check", body)


def write_check_pages(out: Path, results: Sequence[CheckResult], source: Path) -> list[Path]:
    """Write the pages (see the module) into ``out`` (made if missing); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    links: list[str] = []
    cycles = _cycles(results, out)
    if cycles is not None:
        links.append(cycles[0])
        written += cycles[1]
    lin = _linearization(results, out)
    if lin is not None:
        links.append(lin.name)
        written.append(lin)
    index = out / "index.html"
    index.write_text(_index(results, source, links))
    return [index, *written]
