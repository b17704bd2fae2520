"""``chaos check FILE --model M --out DIR``: the cycles drawn, each edge explained, and a failed
linearization's longest prefix with the ops that cannot follow it — on a real Jepsen etcd
history (Porcupine's corpus) and on small histories whose anomaly is known."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaos.checkers import models
from chaos.checkers.linearizable import check_linearizable
from chaos.cli import main
from tests.corpus import PORCUPINE
from tests.unit.test_check_edn_histories import STALE, line
from tests.unit.test_elle_json import HISTORY as READ_SKEW


def _check(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["check", *args])
    return r.exit_code, r.output


@pytest.mark.corpus
def test_a_real_etcd_history_draws_its_failed_linearization(tmp_path: Path) -> None:
    out = tmp_path / "pages"
    code, output = _check(
        [str(PORCUPINE / "jepsen" / "etcd_000.log"), "--model", "cas-register", "--out", str(out)]
    )
    assert code == 1, output
    assert "wrote " in output and "index.html" in output
    page = (out / "linearization.html").read_text()
    assert "The longest linearizable prefix holds <b>42</b> ops" in page
    assert "in state <code>4</code>" in page
    # the read of 2 (op 84, process 11) is the op that cannot follow: red, in its table
    cannot = page.split("<h3>Ops that cannot follow the prefix</h3>")[1].split("<h3>")[0]
    assert re.findall(r"<tr><td></td><td>(.*?)</td><td>(\d+)</td><td>(\d+)</td>", cannot) == [
        ("read() -&gt; 2", "11", "84")
    ]
    prefix = page.split("<h3>The prefix, in linearization order</h3>")[1]
    assert prefix.count("<tr><td>") == 42
    assert prefix.index("<td>1</td><td>read() -&gt; nil</td>") < prefix.index("<td>42</td>")
    svg = page.split("<svg")[1]
    svg = svg.split("</svg>")[0]
    assert svg.count('fill="#c0392b"') == 1 and svg.count('fill="#2e8b3a"') == 42
    assert "process 14" in svg and "write(4) -&gt; ? (op 80 to 89)" in svg  # hovered: the op
    index = (out / "index.html").read_text()
    assert 'href="linearization.html"' in index and "invalid" in index


def test_the_ops_that_cannot_follow_a_stale_prefix() -> None:
    from chaos.histories.edn import read_history_text

    ops, _ = read_history_text("\n".join(STALE))
    r = check_linearizable(ops, models.cas_register())
    (a,) = r.anomalies
    assert [o["op"] for o in a["cannot_follow"]] == ["read() -> 1"]
    assert a["state"] == "2"


def test_cycles_are_drawn_with_each_edge_explained(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(READ_SKEW)
    out = tmp_path / "pages"
    code, output = _check(
        [str(f), "--model", "list-append", "--consistency", "serializable", "--out", str(out)]
    )
    assert code == 1, output
    page = (out / "cycles.html").read_text()
    assert "<h2>G-single</h2>" in page and "<svg" in page
    assert "T1 &lt; T2: T1&#x27;s read of key x ([]) missed T2&#x27;s append of 1 (rw)" in page
    assert "[[append x 1] [append z 2]]" in page
    assert (out / "cycle-1-G-single.svg").read_text().startswith("<svg")
    index = (out / "index.html").read_text()
    assert "not consistent-view, repeatable-read; also not" in index
    assert 'href="cycles.html"' in index


def test_a_valid_history_gets_an_index_that_says_nothing_to_draw(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text("\n".join(line(i, t, "write", "1", 0) for i, t in enumerate(["invoke", "ok"])))
    code, output = _check([str(f), "--model", "cas-register", "--out", str(tmp_path / "o")])
    assert code == 0, output
    assert "No cycle and no failed linearization" in (tmp_path / "o" / "index.html").read_text()
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["index.html"]


def test_out_is_refused_where_it_cannot_be_written_or_means_nothing(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(READ_SKEW)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, output = _check([str(f), "--model", "list-append", "--out", str(blocker / "x")])
    assert code == 3 and "--out: cannot write" in output and "Traceback" not in output
    run = tmp_path / "run"
    run.mkdir()
    code, output = _check([str(run), "--out", str(tmp_path / "o")])
    assert code == 3 and "--out" in output


def test_history_text_cannot_inject_markup_into_the_pages(tmp_path: Path) -> None:
    # values are the history's (untrusted): a stale read of a string that is markup
    evil = '"<script>alert(1)</script>"'
    ops = [
        line(0, "invoke", "write", evil, 0),
        line(1, "ok", "write", evil, 0),
        line(2, "invoke", "write", '"b"', 1),
        line(3, "ok", "write", '"b"', 1),
        line(4, "invoke", "read", "nil", 2),
        line(5, "ok", "read", evil, 2),
    ]
    f = tmp_path / "h.edn"
    f.write_text("\n".join(ops) + "\n")
    out = tmp_path / "o"
    code, output = _check([str(f), "--model", "register", "--out", str(out)])
    assert code == 1, output
    for page in out.iterdir():
        text = page.read_text()
        assert "<script>" not in text, page.name
    assert "&lt;script&gt;" in (out / "linearization.html").read_text()
