"""The docs' option tables are the workloads' declarations (chaos.core.options), so they cannot
drift: each shipped workload that takes ``-o`` options has one block

    <!-- options: NAME -->
    | option | value | default | what it does |
    ...
    <!-- /options -->

somewhere under docs/, equal to :func:`~chaos.core.options.markdown_table` of its declarations.
``CHAOS_WRITE_SAMPLES=1`` writes the tables into the docs instead: that is how they are made.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from chaos.core.capabilities import options_of
from chaos.core.options import markdown_table
from chaos.workloads import registry

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(<!-- options: ([\w.-]+) -->\n)(.*?)(<!-- /options -->)", re.S)
DECLARING = [n for n in sorted(registry.BUILTIN) if options_of(registry.BUILTIN[n]())]


def blocks(text: str) -> dict[str, list[str]]:
    """Each workload's option blocks in a page: its name -> their contents."""
    found: dict[str, list[str]] = {}
    for m in BLOCK.finditer(text):
        found.setdefault(m[2], []).append(m[3])
    return found


def rewrite(text: str, tables: dict[str, str]) -> str:
    """The page with each named block's content replaced by that workload's table."""
    return BLOCK.sub(lambda m: m[1] + tables.get(m[2], m[3]) + m[4], text)


def _pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def test_the_shipped_workloads_declare_options() -> None:
    """The test below must have something to hold: the labs and etcd-append take options."""
    assert {"lab1", "lab3", "etcd-append"} <= set(DECLARING)


@pytest.mark.parametrize("name", DECLARING)
def test_each_workloads_options_table_in_the_docs_is_its_declarations(name: str) -> None:
    table = markdown_table(options_of(registry.get(name)))
    where = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        if name not in blocks(text):
            continue
        if os.environ.get("CHAOS_WRITE_SAMPLES"):
            page.write_text(rewrite(text, {name: table}), encoding="utf-8")
            text = page.read_text(encoding="utf-8")
        where += [(page, content) for content in blocks(text)[name]]
    assert len(where) == 1, f"{name}: expected one `<!-- options: {name} -->` block in docs/"
    page, content = where[0]
    assert content == table, (
        f"{page.relative_to(ROOT)}: {name}'s options table differs from its declarations "
        "(CHAOS_WRITE_SAMPLES=1 rewrites it)"
    )


def test_every_block_names_a_workload_that_declares_options() -> None:
    stray = [
        (p.name, n) for p in _pages() for n in blocks(p.read_text("utf-8")) if n not in DECLARING
    ]
    assert not stray


def test_the_check_finds_a_stale_table() -> None:
    """The comparison can fail: a table with a row missing is not the declarations'."""
    table = markdown_table(options_of(registry.get("lab3")))
    page = f"x\n<!-- options: lab3 -->\n{table.splitlines()[0]}\n<!-- /options -->\n"
    assert blocks(page)["lab3"] != [table]
    assert blocks(rewrite(page, {"lab3": table}))["lab3"] == [table]
