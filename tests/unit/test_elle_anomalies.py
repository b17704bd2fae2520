"""Elle-style checking: each anomaly class on a hand-made history that must show it, and its
closest neighbour that must not — each cycle asserted with its explanation."""

from __future__ import annotations

from chaos.checkers.elle import RawOp, list_append, transactions
from chaos.checkers.elle.graph import RW, WW
from chaos.checkers.verdict import CheckResult, Verdict
from tests.unit.elle_history import T, check, concurrent, found, serial, steps, then

# ----------------------------------------------------------------- list-append, cycles


def test_g0_write_cycle_found_and_consistent_orders_pass() -> None:
    t1 = ("ok", 0, [("append", "x", 1), ("append", "y", 1)])
    t2 = ("ok", 1, [("append", "x", 2), ("append", "y", 2)])
    bad = then(concurrent(t1, t2), serial(("ok", 2, [("r", "x", [1, 2]), ("r", "y", [2, 1])])))
    r = check(bad, "read-uncommitted")
    assert r.verdict is Verdict.INVALID
    (g0,) = found(r, "G0")
    assert steps(g0) == [
        "T1 < T2: T2 appended 2 to key x right after T1's append of 1 (ww)",
        "T2 < T1: T1 appended 1 to key y right after T2's append of 2 (ww)",
    ]
    assert g0["cycle"] == [2, 3] and g0["forbidden"]
    good = then(concurrent(t1, t2), serial(("ok", 2, [("r", "x", [1, 2]), ("r", "y", [1, 2])])))
    r = check(good)
    assert r.verdict is Verdict.VALID, r.summary
    assert not r.anomalies


def test_g1c_circular_information_flow_and_a_one_way_flow() -> None:
    t1 = ("ok", 0, [("append", "x", 1), ("r", "y", [1])])
    t2 = ("ok", 1, [("append", "y", 1), ("r", "x", [1])])
    r = check(concurrent(t1, t2), "read-committed")
    assert r.verdict is Verdict.INVALID
    (g1c,) = found(r, "G1c")
    assert steps(g1c) == [
        "T1 < T2: T2 read T1's append of 1 to key x (read [1]) (wr)",
        "T2 < T1: T1 read T2's append of 1 to key y (read [1]) (wr)",
    ]
    # T1 no longer sees T2's write: T1 then T2 explains both reads
    t1_ = ("ok", 0, [("append", "x", 1), ("r", "y", [])])
    seen = ("ok", 2, [("r", "y", [1])])
    r = check(then(concurrent(t1_, t2), serial(seen)), "strict-serializable")
    assert r.verdict is Verdict.VALID, r.summary
    assert not r.anomalies


def test_g_single_read_skew_and_a_consistent_read() -> None:
    t1 = ("ok", 0, [("r", "x", []), ("r", "z", [2])])
    t2 = ("ok", 1, [("append", "x", 1), ("append", "z", 2)])
    later = ("ok", 2, [("r", "x", [1])])
    r = check(then(concurrent(t1, t2), serial(later)), "snapshot-isolation")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-single")
    assert sorted(steps(g)) == sorted(
        [
            "T1 < T2: T1's read of key x ([]) missed T2's append of 1 (rw)",
            "T2 < T1: T1 read T2's append of 2 to key z (read [2]) (wr)",
        ]
    )
    t1_ok = ("ok", 0, [("r", "x", [1]), ("r", "z", [2])])
    r = check(then(concurrent(t1_ok, t2), serial(later)))
    assert r.verdict is Verdict.VALID and not r.anomalies, r.summary


def test_g_nonadjacent_and_its_neighbour() -> None:
    t1 = ("ok", 0, [("r", "a", []), ("r", "d", [1])])
    t2 = ("ok", 1, [("append", "a", 1), ("append", "b", 1)])
    t3 = ("ok", 2, [("r", "b", [1]), ("r", "c", [])])
    t4 = ("ok", 3, [("append", "c", 1), ("append", "d", 1)])
    later = ("ok", 4, [("r", "a", [1]), ("r", "c", [1])])
    r = check(then(concurrent(t1, t2, t3, t4), serial(later)), "snapshot-isolation")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-nonadjacent")
    kinds = [s["type"] for s in g["steps"]]
    assert sorted(kinds) == ["rw", "rw", "wr", "wr"] and len(g["cycle"]) == 4
    assert "T1's read of key a ([]) missed T2's append of 1 (rw)" in " ".join(steps(g))
    assert not found(r, "G-single")
    t1_: T = ("ok", 0, [("r", "a", []), ("r", "d", [])])  # T1 saw neither: no edge into it
    r = check(then(concurrent(t1_, t2, t3, t4), serial(later)))
    assert r.verdict is Verdict.VALID, r.summary


def test_g2_item_write_skew_allowed_by_si_forbidden_by_serializable() -> None:
    t1 = ("ok", 0, [("r", "y", []), ("append", "x", 1)])
    t2 = ("ok", 1, [("r", "x", []), ("append", "y", 2)])
    later = ("ok", 2, [("r", "x", [1]), ("r", "y", [2])])
    h = then(concurrent(t1, t2), serial(later))
    r = check(h, "serializable")
    assert r.verdict is Verdict.INVALID
    (g2,) = found(r, "G2-item")
    assert sorted(steps(g2)) == [
        "T1 < T2: T1's read of key y ([]) missed T2's append of 2 (rw)",
        "T2 < T1: T2's read of key x ([]) missed T1's append of 1 (rw)",
    ]
    assert check(h, "snapshot-isolation").verdict is Verdict.VALID
    t2_saw = ("ok", 1, [("r", "x", [1]), ("append", "y", 2)])
    r = check(then(concurrent(t1, t2_saw), serial(later)), "serializable")
    assert r.verdict is Verdict.VALID, r.summary


def test_an_append_no_read_shows_still_follows_every_element_read() -> None:
    """Elle's inference: a committed append that no read shows came after the last element
    read, and after that version's readers — the edges that make this G2-item."""
    t1 = ("ok", 0, [("append", 9, 2)])
    t2 = ("ok", 1, [("append", 8, 1), ("r", 9, [])])
    t3 = ("ok", 2, [("r", 6, []), ("r", 8, []), ("append", 9, 5)])
    t4 = ("ok", 3, [("append", 6, 2), ("r", 9, [2])])
    h = concurrent(t1, t2, t3, t4)
    r = check(h, "repeatable-read")
    assert r.verdict is Verdict.INVALID
    (g2,) = found(r, "G2-item")
    # the shortest G2-item (the search keeps the shortest it saw): T3 and T4
    assert steps(g2) == [
        "T1 < T2: T1's read of key 6 ([]) missed T2's append of 2, which no read shows (rw)",
        "T2 < T1: T2's read of key 9 ([2]) missed T1's append of 5, which no read shows (rw)",
    ]
    # and the ww edge from the last element read's writer to the append no read shows
    txns, _ = transactions(h)
    g = list_append.infer(txns).graph
    assert g.succ[0][2] & WW and g.succ[3][2] & RW
    assert check(h, "snapshot-isolation").verdict is Verdict.VALID
    # T3 appends elsewhere: nothing orders it after T1 on key 9, no cycle
    t3_ = ("ok", 2, [("r", 6, []), ("r", 8, []), ("append", 10, 5)])
    r = check(concurrent(t1, t2, t3_, t4), "repeatable-read")
    assert r.verdict is Verdict.VALID, r.summary


# ----------------------------------------------------------- list-append, no cycle needed


def test_g1a_aborted_read_and_an_info_write_that_may_have_happened() -> None:
    w = ("fail", 0, [("append", "x", 1)])
    rd = ("ok", 1, [("r", "x", [1])])
    r = check(then(serial(w), serial(rd)), "read-committed")
    assert r.verdict is Verdict.INVALID
    (g1a,) = found(r, "G1a")
    assert (
        g1a["explanation"] == "op 3 read 1 in key x, appended by op 1, which failed (aborted read)"
    )
    maybe = ("info", 0, [("append", "x", 1)])
    r = check(then(serial(maybe), serial(rd)))
    assert r.verdict is Verdict.VALID, r.summary  # info: it may have happened, and did


def test_g1a_in_a_read_that_is_not_the_longest() -> None:
    ok = ("ok", 0, [("append", "x", 1), ("append", "x", 2)])
    aborted = ("fail", 1, [("append", "x", 3)])
    r1 = ("ok", 2, [("r", "x", [1, 2])])
    r2 = ("ok", 3, [("r", "x", [3])])
    r = check(then(serial(aborted), concurrent(ok, r1, r2)), "read-committed")
    assert r.verdict is Verdict.INVALID
    (g1a,) = found(r, "G1a")
    assert g1a["explanation"].startswith("op 7 read 3 in key x, appended by op 1, which failed")


def test_g1b_intermediate_read_and_the_final_read() -> None:
    w = ("ok", 0, [("append", "x", 1), ("append", "x", 2)])
    r = check(concurrent(w, ("ok", 1, [("r", "x", [1])])), "read-committed")
    (g1b,) = found(r, "G1b")
    assert r.verdict is Verdict.INVALID
    assert "which op 2 appended and then appended to again" in g1b["explanation"]
    r = check(concurrent(w, ("ok", 1, [("r", "x", [1, 2])])))
    assert r.verdict is Verdict.VALID, r.summary


def test_internal_inconsistency_and_reading_ones_own_append() -> None:
    r = check(serial(("ok", 0, [("append", "x", 1), ("r", "x", [])])), "serializable")
    assert r.verdict is Verdict.INVALID
    (a,) = found(r, "internal")
    assert "must see a list ending in its own appends [1]" in a["explanation"]
    # one transaction alone depends on nothing: no anomaly, and nothing proven (Elle: unknown)
    r = check(serial(("ok", 0, [("r", "x", []), ("append", "x", 1), ("r", "x", [1])])))
    assert r.verdict is Verdict.UNKNOWN and not r.anomalies
    assert "empty transaction graph" in r.summary
    # allowed by repeatable read, as in Elle's table
    own = ("ok", 0, [("append", "x", 1), ("r", "x", [])])
    r = check(serial(own, ("ok", 0, [("r", "x", [1])])), "repeatable-read")
    assert r.verdict is Verdict.VALID and found(r, "internal")


def test_lost_update_and_a_read_modify_write_that_saw_the_other() -> None:
    t1 = ("ok", 0, [("r", "x", []), ("append", "x", 1)])
    t2 = ("ok", 1, [("r", "x", []), ("append", "x", 2)])
    later = ("ok", 2, [("r", "x", [1, 2])])
    r = check(then(concurrent(t1, t2), serial(later)), "snapshot-isolation")
    assert r.verdict is Verdict.INVALID
    (lu,) = found(r, "lost-update")
    assert lu["explanation"] == (
        "ops 2, 3 each read key x = [] and appended to it: each update was made without the others"
    )
    t2_saw = ("ok", 1, [("r", "x", [1]), ("append", "x", 2)])
    r = check(then(concurrent(t1, t2_saw), serial(later)), "snapshot-isolation")
    assert r.verdict is Verdict.VALID, r.summary


def test_incompatible_order_and_prefixes() -> None:
    a = ("ok", 0, [("append", "x", 1)])
    b = ("ok", 1, [("append", "x", 2)])
    r1 = ("ok", 2, [("r", "x", [1, 2])])
    r2 = ("ok", 3, [("r", "x", [2, 1])])
    r = check(concurrent(a, b, r1, r2), "read-committed")
    assert r.verdict is Verdict.INVALID
    (io,) = found(r, "incompatible-order")
    assert "neither is a prefix of the other" in io["explanation"]
    r = check(concurrent(a, b, r1, ("ok", 3, [("r", "x", [1])])))
    assert r.verdict is Verdict.VALID, r.summary


def test_duplicate_elements_and_a_clean_read() -> None:
    a = ("ok", 0, [("append", "x", 1)])
    r = check(concurrent(a, ("ok", 1, [("r", "x", [1, 1])])), "read-uncommitted")
    assert r.verdict is Verdict.INVALID and found(r, "duplicate-elements")
    r = check(concurrent(a, ("ok", 1, [("r", "x", [1])])))
    assert r.verdict is Verdict.VALID


def test_garbage_read_of_an_element_nobody_appended() -> None:
    r = check(serial(("ok", 0, [("r", "x", [7])])), "read-committed")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "garbage-read")
    assert g["explanation"] == "op 1 read 7 in key x, which no transaction appended"


def test_rw_register_reads_of_a_failed_write_and_of_a_value_nobody_wrote() -> None:
    w = ("fail", 0, [("w", "x", 1)])
    rd = ("ok", 1, [("r", "x", 1)])
    r = check(then(serial(w), serial(rd)), "read-committed", model="rw-register")
    assert r.verdict is Verdict.INVALID
    (g1a,) = found(r, "G1a")
    assert g1a["explanation"] == "op 3 read key x = 1, written by op 1, which failed (aborted read)"
    r = check(serial(("ok", 0, [("r", "x", 7)])), "read-committed", model="rw-register")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "garbage-read")
    assert g["explanation"] == "op 1 read key x = 7, which no transaction wrote"
    # the read of a committed write is neither
    ok = ("ok", 0, [("w", "x", 1)])
    r = check(then(serial(ok), serial(rd)), "read-committed", model="rw-register")
    assert r.verdict is Verdict.VALID


# ------------------------------------------------------------ process and real-time order


def test_stale_read_is_g_single_realtime_only_under_strict_serializable() -> None:
    h = serial(("ok", 0, [("append", "x", 1)]), ("ok", 1, [("r", "x", [])]))
    h = then(h, serial(("ok", 2, [("r", "x", [1])])))
    r = check(h, "serializable")
    assert r.verdict is Verdict.VALID, r.summary
    r = check(h, "strict-serializable")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-single-realtime")
    assert steps(g) == [
        "T1 < T2: T1's read of key x ([]) missed T2's append of 1 (rw)",
        "T2 < T1: T2 completed (op 1) before T1 was invoked (op 2) (realtime)",
    ]
    # a concurrent read may miss the append
    h = then(concurrent(("ok", 0, [("append", "x", 1)]), ("ok", 1, [("r", "x", [])])))
    h = then(h, serial(("ok", 2, [("r", "x", [1])])))
    assert check(h, "strict-serializable").verdict is Verdict.VALID


def test_not_reading_ones_own_write_is_g_single_process() -> None:
    h = serial(("ok", 0, [("append", "x", 1)]), ("ok", 0, [("r", "x", [])]))
    h = then(h, serial(("ok", 2, [("r", "x", [1])])))
    r = check(h, "strong-session-serializable")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-single-process")
    assert steps(g) == [
        "T1 < T2: T1's read of key x ([]) missed T2's append of 1 (rw)",
        "T2 < T1: process 0 ran T2 then T1 (process)",
    ]
    assert check(h, "serializable").verdict is Verdict.VALID


def test_an_info_write_counts_only_where_a_read_proves_it() -> None:
    maybe = ("info", 0, [("append", "x", 1)])
    saw = ("ok", 1, [("r", "x", [1])])
    missed: T = ("ok", 2, [("r", "x", [])])
    # the read after the read that saw it missed it: a stale read through the info write
    r = check(then(concurrent(maybe), serial(saw), serial(missed)), "strict-serializable")
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-single-realtime")
    assert any("missed T" in s for s in steps(g))
    # nobody read it: it may not have happened, and a read missing it is fine
    r = check(
        then(concurrent(maybe), serial(missed, ("ok", 3, [("r", "x", [])]))), "strict-serializable"
    )
    assert r.verdict is Verdict.VALID, r.summary
    # an info txn's own reads are unknown: never evidence
    blind: T = ("info", 1, [("r", "x", [])])
    r = check(then(serial(("ok", 0, [("append", "x", 1)])), concurrent(blind)))
    assert r.verdict is Verdict.VALID


# ----------------------------------------------------------------------------- rw-register


def rw(h: list[RawOp], consistency: str = "serializable") -> CheckResult:
    return check(h, consistency, model="rw-register")


def test_rw_register_lost_update_and_g2_through_writes_follow_reads() -> None:
    t1 = ("ok", 0, [("r", "x", None), ("w", "x", 1)])
    t2 = ("ok", 1, [("r", "x", None), ("w", "x", 2)])
    r = rw(concurrent(t1, t2), "snapshot-isolation")
    assert r.verdict is Verdict.INVALID
    (lu,) = found(r, "lost-update")
    assert lu["txns"] == [2, 3]
    t2_saw = ("ok", 1, [("r", "x", 1), ("w", "x", 2)])
    r = rw(concurrent(t1, t2_saw), "serializable")
    assert r.verdict is Verdict.VALID, r.summary


def test_rw_register_g_single_from_the_initial_nil() -> None:
    t1 = ("ok", 0, [("r", "x", None), ("r", "y", 2)])
    t2 = ("ok", 1, [("w", "x", 1), ("w", "y", 2)])
    r = rw(concurrent(t1, t2))
    assert r.verdict is Verdict.INVALID
    (g,) = found(r, "G-single")
    assert sorted(steps(g)) == [
        "T1 < T2: T1 read key x = the initial nil, which T2's write of 1 overwrote "
        "(rw, every written version follows the initial nil)",
        "T2 < T1: T1 read T2's write of 2 to key y (wr)",
    ]
    t1_ok = ("ok", 0, [("r", "x", 1), ("r", "y", 2)])
    assert rw(concurrent(t1_ok, t2)).verdict is Verdict.VALID


def test_rw_register_aborted_intermediate_internal_and_garbage() -> None:
    r = rw(then(serial(("fail", 0, [("w", "x", 1)])), serial(("ok", 1, [("r", "x", 1)]))))
    assert found(r, "G1a") and r.verdict is Verdict.INVALID
    w2 = ("ok", 0, [("w", "x", 1), ("w", "x", 2)])
    r = rw(concurrent(w2, ("ok", 1, [("r", "x", 1)])))
    assert found(r, "G1b") and r.verdict is Verdict.INVALID
    assert rw(concurrent(w2, ("ok", 1, [("r", "x", 2)]))).verdict is Verdict.VALID
    r = rw(serial(("ok", 0, [("w", "x", 1), ("r", "x", 3)])))
    assert found(r, "internal")
    r = rw(serial(("ok", 0, [("r", "x", 9)])))
    assert found(r, "garbage-read")


def test_rw_register_cyclic_versions() -> None:
    t1 = ("ok", 0, [("r", "x", 1), ("w", "x", 2)])
    t2 = ("ok", 1, [("r", "x", 2), ("w", "x", 1)])
    r = rw(concurrent(t1, t2), "read-committed")
    assert r.verdict is Verdict.INVALID
    (c,) = found(r, "cyclic-versions")
    assert "order its versions in a cycle" in c["explanation"]
