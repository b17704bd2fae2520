"""``chaos check --json`` on transactions: each cycle's transactions carry their micro-ops as
data (``[f, key, value]``), beside the EDN text the report shows."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from chaos.cli.model_check import check_file_command

# read skew: T1 reads x empty and z = [2]; T2 appends to both; a later read sees x = [1]
HISTORY = """\
{:type :invoke, :process 0, :f :txn, :value [[:r :x nil] [:r :z nil]]}
{:type :invoke, :process 1, :f :txn, :value [[:append :x 1] [:append :z 2]]}
{:type :ok, :process 0, :f :txn, :value [[:r :x []] [:r :z [2]]]}
{:type :ok, :process 1, :f :txn, :value [[:append :x 1] [:append :z 2]]}
{:type :invoke, :process 2, :f :txn, :value [[:r :x nil]]}
{:type :info, :process 2, :f :txn, :value [[:r :x nil]]}
{:type :invoke, :process 3, :f :txn, :value [[:r :x nil]]}
{:type :ok, :process 3, :f :txn, :value [[:r :x [1]]]}
"""


def test_json_cycles_carry_micro_ops_as_data(tmp_path: Path) -> None:
    f = tmp_path / "h.edn"
    f.write_text(HISTORY)
    r = CliRunner().invoke(
        check_file_command,
        [str(f), "--model", "list-append", "--consistency", "serializable", "--json"],
    )
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    (g,) = [a for a in doc["results"][0]["anomalies"] if a["type"] == "G-single"]
    by_index = {t["index"]: t for t in g["txns"]}
    assert by_index[2]["value"] == [["r", "x", []], ["r", "z", [2]]]
    assert by_index[3]["value"] == [["append", "x", 1], ["append", "z", 2]]
    assert by_index[2]["text"] == "[[r x []] [r z [2]]]"
    assert doc["results"][0]["stats"]["not"] == ["consistent-view", "repeatable-read"]
